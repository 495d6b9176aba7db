import type { RunResult, SqlValue, Tx } from './types.js'

/**
 * `IN (...)` over a list bound as one JSON array: one statement text whatever the list's length, so it is prepared
 * once and named once in the journal (a `?` per item would make a new statement for every length).
 */
export const IN_LIST = 'IN (SELECT value FROM json_each(?))'

export function inList(values: readonly (string | number)[]): string {
  return JSON.stringify(values)
}

/**
 * Inserts rows with few statements: `INSERT ... VALUES (...), (...) <tail>` over slices of 64, 32, ..., 1 rows, so a
 * few distinct statement texts serve any row count. Answers each statement's result with the rows it inserted.
 */
export function insertRows(tx: Tx, head: string, tail: string, rows: readonly (readonly SqlValue[])[]): { rows: number; result: RunResult }[] {
  const out: { rows: number; result: RunResult }[] = []
  let i = 0
  for (let size = 64; size >= 1; size >>= 1) {
    while (rows.length - i >= size) {
      const slice = rows.slice(i, i + size)
      const row = `(${new Array<string>(slice[0]!.length).fill('?').join(', ')})`
      out.push({ rows: size, result: tx.run(`${head} VALUES ${new Array<string>(size).fill(row).join(', ')} ${tail}`, slice.flat()) })
      i += size
    }
  }
  return out
}
