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
 * `placeholders` gives each column's placeholder when it is not a plain `?` (see TEXT_FROM_BYTES).
 */
export function insertRows(tx: Tx, head: string, tail: string, rows: readonly (readonly SqlValue[])[], placeholders?: readonly string[]): { rows: number; result: RunResult }[] {
  const out: { rows: number; result: RunResult }[] = []
  let i = 0
  for (let size = 64; size >= 1; size >>= 1) {
    while (rows.length - i >= size) {
      const slice = rows.slice(i, i + size)
      const row = `(${(placeholders ?? new Array<string>(slice[0]!.length).fill('?')).join(', ')})`
      out.push({ rows: size, result: tx.run(`${head} VALUES ${new Array<string>(size).fill(row).join(', ')} ${tail}`, slice.flat()) })
      i += size
    }
  }
  return out
}

/**
 * A TEXT column's placeholder bound with the text's UTF-8 bytes (`textBytes`): sql.js copies a Uint8Array into
 * SQLite at memory speed, while it encodes a JS string one character at a time in JavaScript (a 16 MiB value
 * held a member's event loop ~200 ms). SQLite's CAST of UTF-8 bytes to TEXT keeps them as they are, so the stored
 * text, and its replay from the journal, are exactly the string's.
 */
export const TEXT_FROM_BYTES = 'CAST(? AS TEXT)'

/** Short text goes as it is (sql.js encodes a few characters as fast as a Buffer is made; CAST leaves text alone). */
export function textBytes(s: string | null | undefined): Uint8Array | string | null {
  if (s === null || s === undefined) return null
  return s.length < TEXT_AS_BYTES_FROM ? s : Buffer.from(s, 'utf8')
}

const TEXT_AS_BYTES_FROM = 4096
