import { DatabaseError } from './errors.js'
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
 * few distinct statement texts serve any row count. Answers each statement's result with the rows it inserted; its
 * `lastInsertRowid` only when `rowids` (0 otherwise: reading it is one more statement each).
 * `placeholders` gives each column's placeholder when it is not a plain `?` (see TEXT_FROM_BYTES).
 */
export function insertRows(
  tx: Tx,
  head: string,
  tail: string,
  rows: readonly (readonly SqlValue[])[],
  placeholders?: readonly string[],
  rowids = false,
): { rows: number; result: RunResult }[] {
  const options = { rowid: rowids }
  const out: { rows: number; result: RunResult }[] = []
  let i = 0
  for (let size = 64; size >= 1; size >>= 1) {
    while (rows.length - i >= size) {
      const columns = rows[i]!.length
      out.push({ rows: size, result: tx.run(insertText(head, tail, size, columns, placeholders), flatten(rows, i, size, columns), options) })
      i += size
    }
  }
  return out
}

/** How many rows the statements of an insertRows changed: with `ON CONFLICT DO NOTHING`, the rows that were new. */
export function insertedCount(results: readonly { result: RunResult }[]): number {
  let n = 0
  for (const r of results) n += r.result.changes
  return n
}

/**
 * The values of rows[from, from + count) in one array, row after row: filled by index, since `rows.slice(...).flat()`
 * took ~20 times as long (Array.prototype.flat is generic, and a page of received messages is thousands of values).
 */
function flatten(rows: readonly (readonly SqlValue[])[], from: number, count: number, columns: number): SqlValue[] {
  const values = new Array<SqlValue>(count * columns)
  let k = 0
  for (let r = from; r < from + count; r++) {
    const row = rows[r]!
    // A wider row would otherwise lose its last values without a word (flat() bound them, and SQLite refused them).
    if (row.length !== columns) throw new DatabaseError('DB_MISUSE', `insertRows: row ${r} has ${row.length} values, the first has ${columns}`)
    for (let c = 0; c < columns; c++) values[k++] = row[c]!
  }
  return values
}

/**
 * The statement texts insertRows has built, so that an insert neither rebuilds its text nor makes the statement cache
 * hash a freshly built string of several kilobytes: the same few (statement, slice size) pairs come back on every
 * send. Keyed by head, tail and row shape (the repositories' constants), so it holds as few texts as they write.
 */
const insertTexts = new Map<string, Map<string, Map<string | number, string[]>>>()

function insertText(head: string, tail: string, size: number, columns: number, placeholders: readonly string[] | undefined): string {
  let byTail = insertTexts.get(head)
  if (byTail === undefined) insertTexts.set(head, (byTail = new Map()))
  let byRow = byTail.get(tail)
  if (byRow === undefined) byTail.set(tail, (byRow = new Map()))
  // A plain row is known by its width; a row with its own placeholders by their text (callers pass constants).
  const rowKey = placeholders ? placeholders.join(', ') : columns
  let bySize = byRow.get(rowKey)
  if (bySize === undefined) byRow.set(rowKey, (bySize = []))
  let text = bySize[size]
  if (text === undefined) {
    const row = `(${(placeholders ?? new Array<string>(columns).fill('?')).join(', ')})`
    text = bySize[size] = `${head} VALUES ${new Array<string>(size).fill(row).join(', ')} ${tail}`
  }
  return text
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
