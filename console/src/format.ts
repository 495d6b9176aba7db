/**
 * Small display helpers shared by the views. Dates are formatted by hand, not with toLocaleString: a browser whose
 * locale comes from an environment like `en-US@posix` throws on it, and one page error would blank a view.
 */

const two = (n: number): string => String(n).padStart(2, '0')

/** `YYYY-MM-DD HH:MM:SS` in the browser's time zone. */
export function time(iso: string | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${clockOf(d)}`
}

function clockOf(d: Date): string {
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
}

/** Time of day with milliseconds: timeline steps are often a few ms apart. */
export function clock(iso: string): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  return `${clockOf(d)}.${String(d.getMilliseconds()).padStart(3, '0')}`
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`
  return `${(n / 1024 ** 3).toFixed(2)} GiB`
}

export function prettyJson(v: unknown): string {
  return JSON.stringify(v, null, 2) ?? 'undefined'
}
