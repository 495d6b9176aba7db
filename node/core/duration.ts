/**
 * A duration in milliseconds as a person reads it in a log line or an error: in the largest unit of ms, s, min and h
 * it makes at least 1 of, to one decimal (`120000` is `2 min`, `86400000` is `24 h`, `1500` is `1.5 s`).
 */
export function readableDuration(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ]
  for (const [size, name] of units) if (ms >= size) return `${Math.round((ms / size) * 10) / 10} ${name}`
  return `${ms} ms`
}
