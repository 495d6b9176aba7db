import type { Statement } from 'sql.js'
import type { RawAccess } from './sqljs.js'
import type { Row } from './types.js'

const SQLITE_INTEGER = 1
const SQLITE_FLOAT = 2
const SQLITE_TEXT = 3
const SQLITE_BLOB = 4

/**
 * Reads the current row of a stepped statement through SQLite's C API, as sql.js's `get` reads it: INTEGER and REAL
 * as numbers (`sqlite3_column_double`), TEXT as a string of all its bytes (NULs included), BLOB as a copy in a new
 * Uint8Array, NULL as null. Text is decoded by Node from SQLite's memory (`Buffer#toString`), where sql.js made a
 * subarray and called a TextDecoder for each value, and copied blobs byte by byte in JavaScript. One difference: a
 * text that begins with U+FEFF keeps it (sql.js's TextDecoder dropped a leading byte order mark, so the value read
 * back was not the value written).
 */
export class RowReader {
  constructor(private readonly raw: RawAccess) {}

  /** The current row as an object keyed by `names` (the statement's column names, in order). */
  row(stmt: Statement, names: readonly string[]): Row {
    const api = this.raw.api
    const pointer = this.raw.pointerOf(stmt)
    const row: Row = {}
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!
      switch (api._sqlite3_column_type(pointer, i)) {
        case SQLITE_INTEGER:
        case SQLITE_FLOAT:
          row[name] = api._sqlite3_column_double(pointer, i)
          break
        case SQLITE_TEXT: {
          const at = api._sqlite3_column_text(pointer, i)
          const n = api._sqlite3_column_bytes(pointer, i)
          // The view is fetched after the column is: sqlite3_column_text may allocate (it adds a NUL to a text that has
          // none, such as a bound value), which can grow the memory and replace its buffer.
          row[name] = n === 0 ? '' : this.raw.heap.get().toString('utf8', at, at + n)
          break
        }
        case SQLITE_BLOB: {
          const at = api._sqlite3_column_blob(pointer, i)
          const n = api._sqlite3_column_bytes(pointer, i)
          row[name] = n === 0 ? new Uint8Array(0) : new Uint8Array(this.raw.heap.get().subarray(at, at + n))
          break
        }
        default:
          row[name] = null
      }
    }
    return row
  }
}
