/**
 * Timestamps as FireFly's Go code writes them (RFC3339Nano, UTC): fractional seconds without trailing zeros,
 * and none at all when zero. Message hashes cover `created`, so every member must format it byte for byte alike.
 */
export type Timestamp = string & { readonly __timestamp: true }

export function formatTimestamp(ms: number, extraNanos = 0): Timestamp {
  const d = new Date(Math.floor(ms))
  const base = d.toISOString().slice(0, 19)
  const nanos = (Math.floor(ms) % 1000) * 1_000_000 + extraNanos
  const frac = nanos === 0 ? '' : '.' + String(nanos).padStart(9, '0').replace(/0+$/, '')
  return `${base}${frac}Z` as Timestamp
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
