import { DatabaseError } from './errors.js'
import type { RunResult, SqlValue, Tx } from './types.js'

/**
 * `IN (...)` over a list bound as one JSON array: one statement text whatever the list's length, so it is prepared
 * once and named once in the journal (a `?` per item would make a new statement for every length).
 */
export const IN_LIST = 'IN (SELECT value FROM json_each(?))'

/**
 * `<column> IN_LIST` as a filter on rows another IN_LIST found by an index: SQLite would otherwise use both lists on a
 * two-column index, probing every pair of their values (1,000 (id, hash) pairs: ~0.7 s against ~5 ms here). The text
 * expression is no index's, so each row the first list finds is only tested against the second.
 */
export function alsoIn(column: string): string {
  return `(${column} || '') ${IN_LIST}`
}

export function inList(values: readonly (string | number)[]): string {
  return JSON.stringify(values)
}

/**
 * Inserts rows with few statements: `INSERT ... VALUES (...), (...) <tail>` over slices of 64, 32, ..., 1 rows, so a
 * few distinct statement texts serve any row count. Answers each statement's result with the rows it inserted; its
 * `lastInsertRowid` only when `rowids` (0 otherwise: reading it is one more statement each).
 * `placeholders` gives each column's placeholder when it is not a plain `?` (see TEXT_FROM_BYTES).
 *
 * A column holding the same string, number or null in every row of a slice (a batch's id, its author, a namespace, a
 * `local` flag, the columns a received message leaves empty) is bound once, as a numbered parameter every row refers
 * to: each bound value is a call into SQLite and a journal record, and a string a copy into SQLite's memory, so a
 * received batch's messages, data, pins and events bound and journaled thousands of copies of a few values.
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
  eachSlice(head, tail, rows, placeholders, (text, values, size) => out.push({ rows: size, result: tx.run(text, values, options) }))
  return out
}

/** The statements of insertRows as writes whose result nobody reads (Tx.write): an engine may send them later, together. */
export function writeRows(tx: Tx, head: string, tail: string, rows: readonly (readonly SqlValue[])[], placeholders?: readonly string[]): void {
  eachSlice(head, tail, rows, placeholders, (text, values) => tx.write(text, values))
}

function eachSlice(
  head: string,
  tail: string,
  rows: readonly (readonly SqlValue[])[],
  placeholders: readonly string[] | undefined,
  f: (text: string, values: SqlValue[], size: number) => void,
): void {
  let i = 0
  for (let size = 64; size >= 1; size >>= 1) {
    while (rows.length - i >= size) {
      const columns = rows[i]!.length
      const { text, shared } = insertText(head, tail, size, columns, placeholders, sharedColumns(rows, i, size, columns))
      f(text, flatten(rows, i, size, columns, shared), size)
      i += size
    }
  }
}

/** How many rows the statements of an insertRows changed: with `ON CONFLICT DO NOTHING`, the rows that were new. */
export function insertedCount(results: readonly { result: RunResult }[]): number {
  let n = 0
  for (const r of results) n += r.result.changes
  return n
}

/**
 * The values of rows[from, from + count) in one array, as insertText numbers them: the `shared` columns' values once
 * (in column order), then each row's other values, row after row (all of them when nothing is shared). Filled by
 * index, since `rows.slice(...).flat()` takes ~20 times as long (Array.prototype.flat is generic, and a page of received
 * messages is thousands of values).
 */
function flatten(rows: readonly (readonly SqlValue[])[], from: number, count: number, columns: number, shared: number): SqlValue[] {
  let sharedCount = 0
  for (let c = 0; c < columns; c++) if (shared & (1 << c)) sharedCount++
  const values = new Array<SqlValue>(sharedCount + count * (columns - sharedCount))
  let k = 0
  const first = rows[from]!
  for (let c = 0; c < columns; c++) if (shared & (1 << c)) values[k++] = first[c]!
  for (let r = from; r < from + count; r++) {
    const row = rows[r]!
    // A wider row would otherwise lose its last values without a word (flat() bound them, and SQLite refused them).
    if (row.length !== columns) throw new DatabaseError('DB_MISUSE', `insertRows: row ${r} has ${row.length} values, the first has ${columns}`)
    for (let c = 0; c < columns; c++) if (!(shared & (1 << c))) values[k++] = row[c]!
  }
  return values
}

/** Columns past this many are never shared (the mask is a 32-bit integer); no table here is that wide. */
const MAX_SHARED_COLUMN = 31
/**
 * How many sets of shared columns one statement shape is written with. Which columns a slice shares depends on the
 * rows, which peers choose: past this many, a slice binds every value in its row, so that no sender can make this
 * node keep (and journal, and prepare) a new statement text for every batch.
 */
const MAX_SHARED_SETS = 16

/**
 * The columns whose value is the same string, number or null in every row of rows[from, from + count) (Object.is: a -0
 * is never taken for 0, which a REAL column would keep apart), as a bit mask (bit c for column c); 0 for a single row. Bytes are left
 * in their rows: a slice rarely repeats them, and comparing them costs more than binding them.
 */
function sharedColumns(rows: readonly (readonly SqlValue[])[], from: number, count: number, columns: number): number {
  if (count < 2) return 0
  let mask = 0
  const first = rows[from]!
  for (let c = 0; c < columns && c < MAX_SHARED_COLUMN; c++) {
    const v = first[c]
    if (v !== null && typeof v !== 'string' && typeof v !== 'number') continue
    let same = true
    for (let r = from + 1; r < from + count && same; r++) same = Object.is(rows[r]![c], v)
    if (same) mask |= 1 << c
  }
  return mask
}

/**
 * The statement texts insertRows has built, so that an insert neither rebuilds its text nor makes the statement cache
 * hash a freshly built string of several kilobytes: the same few (statement, slice size) pairs come back on every
 * send. Keyed by head, tail and row shape (the repositories' constants), so it holds as few texts as they write.
 */
const insertTexts = new Map<string, Map<string, Map<string | number, Map<number, string[]>>>>()

/** The statement's text, and the shared columns it was written for: none once its shape has MAX_SHARED_SETS. */
function insertText(head: string, tail: string, size: number, columns: number, placeholders: readonly string[] | undefined, wanted: number): { text: string; shared: number } {
  let byTail = insertTexts.get(head)
  if (byTail === undefined) insertTexts.set(head, (byTail = new Map()))
  let byRow = byTail.get(tail)
  if (byRow === undefined) byTail.set(tail, (byRow = new Map()))
  // A plain row is known by its width; a row with its own placeholders by their text (callers pass constants).
  const rowKey = placeholders ? placeholders.join(', ') : columns
  let byShared = byRow.get(rowKey)
  if (byShared === undefined) byRow.set(rowKey, (byShared = new Map()))
  const sets = byShared.size - (byShared.has(0) ? 1 : 0)
  const shared = wanted !== 0 && !byShared.has(wanted) && sets >= MAX_SHARED_SETS ? 0 : wanted
  let bySize = byShared.get(shared)
  if (bySize === undefined) byShared.set(shared, (bySize = []))
  let text = bySize[size]
  if (text === undefined) {
    const marks = placeholders ?? new Array<string>(columns).fill('?')
    let rows: string[]
    if (shared === 0) rows = new Array<string>(size).fill(`(${marks.join(', ')})`)
    else {
      // Numbered parameters: ?1..?k the shared columns, then each row's own values in order.
      const sharedNumber: number[] = []
      let k = 0
      for (let c = 0; c < columns; c++) if (shared & (1 << c)) sharedNumber[c] = ++k
      const own = columns - k
      rows = []
      for (let r = 0; r < size; r++) {
        let j = 0
        const row = marks.map((m, c) => m.replace('?', `?${sharedNumber[c] ?? k + r * own + ++j}`))
        rows.push(`(${row.join(', ')})`)
      }
    }
    text = bySize[size] = `${head} VALUES ${rows.join(', ')} ${tail}`
  }
  return { text, shared }
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
