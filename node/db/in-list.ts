import type { SqlValue, Tx } from './types.js'

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

/**
 * Inserts rows with few statements: `INSERT ... VALUES (...), (...) <tail>` over slices of 64, 32, ..., 1 rows, so a
 * few distinct statement texts serve any row count (prepared once, and named once in the journal).
 */
export function insertRows(tx: Tx, head: string, tail: string, rows: readonly (readonly SqlValue[])[]): void {
  let i = 0
  for (let size = 64; size >= 1; size >>= 1) {
    while (rows.length - i >= size) {
      const slice = rows.slice(i, i + size)
      const row = `(${new Array<string>(slice[0]!.length).fill('?').join(', ')})`
      tx.run(`${head} VALUES ${new Array<string>(size).fill(row).join(', ')} ${tail}`, slice.flat())
      i += size
    }
  }
}
