/**
 * SQLite binds at most 32,766 parameters per statement; lists are cut well below that so a statement with a few
 * other parameters still fits.
 */
export const MAX_IN = 500

/** `(?, ?, ...)` for `n` values. */
export function placeholders(n: number): string {
  return `(${new Array<string>(n).fill('?').join(', ')})`
}

/** `items` in consecutive slices of at most `size`. */
export function* chunks<T>(items: readonly T[], size = MAX_IN): Generator<readonly T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size)
}
