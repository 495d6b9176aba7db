/** Nearest-rank percentile of an ascending-sorted list; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

export interface Summary {
  count: number
  p50: number
  p95: number
  p99: number
  min: number
  max: number
  mean: number
}

export function summarize(values: number[]): Summary {
  const s = [...values].sort((a, b) => a - b)
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN
  return { count: s.length, p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN, mean }
}

/** Rounds for printing and JSON: `digits` decimals; NaN and infinities become null. */
export function round(n: number, digits = 1): number | null {
  if (!Number.isFinite(n)) return null
  const f = 10 ** digits
  return Math.round(n * f) / f
}

/**
 * Milliseconds since the epoch of an RFC3339 UTC timestamp with up to nanosecond precision
 * (`2024-05-01T10:00:00.123456789Z`), keeping the sub-millisecond part as a fraction.
 */
export function parseTimestampMs(ts: string): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/.exec(ts)
  if (!m) return NaN
  const whole = Date.parse(`${m[1]}Z`)
  return m[2] ? whole + Number(`0.${m[2]}`) * 1000 : whole
}

/** Smallest and largest of a list without spreading it into arguments; NaN when empty. */
export function minOf(values: readonly number[]): number {
  let m = NaN
  for (const v of values) if (!(v >= m)) m = v
  return m
}

export function maxOf(values: readonly number[]): number {
  let m = NaN
  for (const v of values) if (!(v <= m)) m = v
  return m
}

/** Least-squares slope of y over x; NaN with fewer than two distinct x. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length
  if (n < 2) return NaN
  const mx = points.reduce((a, p) => a + p.x, 0) / n
  const my = points.reduce((a, p) => a + p.y, 0) / n
  let sxy = 0
  let sxx = 0
  for (const p of points) {
    sxy += (p.x - mx) * (p.y - my)
    sxx += (p.x - mx) ** 2
  }
  return sxx > 0 ? sxy / sxx : NaN
}
