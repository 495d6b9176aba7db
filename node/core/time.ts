/**
 * Timestamps as FireFly's Go code writes them (RFC3339Nano, UTC): fractional seconds without trailing zeros,
 * and none at all when zero. Message hashes cover `created`, so every member must format it byte for byte alike.
 */
export type Timestamp = string & { readonly __timestamp: true }

/** The second formatTimestamp last wrote, and its text to the second. */
let lastSecond = NaN
let lastSecondText = ''

export function formatTimestamp(ms: number, extraNanos = 0): Timestamp {
  const whole = Math.floor(ms)
  // Every message's `created` is formatted: the date and time to the second are reused within the second.
  const second = Math.floor(whole / 1000)
  if (second !== lastSecond) {
    lastSecondText = new Date(second * 1000).toISOString().slice(0, 19)
    lastSecond = second
  }
  const nanos = (((whole % 1000) + 1000) % 1000) * 1_000_000 + extraNanos
  if (nanos === 0) return `${lastSecondText}Z` as Timestamp
  const digits = String(nanos).padStart(9, '0')
  let end = digits.length
  while (digits.charCodeAt(end - 1) === 0x30) end--
  return `${lastSecondText}.${digits.slice(0, end)}Z` as Timestamp
}

let lastMs = 0
let lastNanos = 0
/** Now, with a nanosecond counter added so that two calls in the same millisecond still order. */
export function now(): Timestamp {
  const ms = Date.now()
  if (ms === lastMs) lastNanos = Math.min(lastNanos + 1, 999_999)
  else {
    lastMs = ms
    lastNanos = 0
  }
  return formatTimestamp(ms, lastNanos)
}

/**
 * A key that sorts like the instant: the Go form trims trailing zeros, so `...03.12Z` would sort after
 * `...03.123Z` as text; the key pads the fraction to nine digits.
 */
export function timestampSortKey(ts: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/.exec(ts)
  if (!m) throw new Error(`not a UTC RFC3339 timestamp: ${ts}`)
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}Z`
}

export function isTimestamp(s: unknown): s is Timestamp {
  return typeof s === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/.test(s)
}
