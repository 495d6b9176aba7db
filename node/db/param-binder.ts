import type { BindParams, Statement } from 'sql.js'
import { utf8Into, utf8Room } from './byte-buffer.js'
import { DatabaseError } from './errors.js'
import { SQLITE_OK, SQLITE_TRANSIENT, type RawAccess } from './sqljs.js'
import type { SqlParams } from './types.js'

/** Scratch kept between statements; a statement whose values need more borrows a larger block, freed at once. */
const SCRATCH_BYTES = 256 * 1024

/**
 * Binds a statement's positional values through SQLite's C API, each string encoded by Node (`Buffer#utf8Write`,
 * native) into one scratch block of SQLite's memory and copied by SQLite (SQLITE_TRANSIENT).
 *
 * sql.js binds each string with a `malloc`, a character-by-character encoder written in JavaScript and a `free` at the
 * next reset: ~5 µs for a message row's 23 values, 9 % of a receiving member's CPU in the receive benchmark, and
 * ~0.8 ms for a batch's 48 KB manifest. This binds the same values to the same types as sql.js's `bind` does:
 * - a string as TEXT, a bigint as the TEXT of its decimal digits;
 * - a number as INTEGER when it is a 32-bit integer, otherwise as REAL (SQLite's column affinity applies after);
 * - a boolean as INTEGER 0 or 1, null as NULL;
 * - a Uint8Array (a Buffer too) as a BLOB.
 * Named parameters (an object) go through sql.js, as before.
 */
export class ParamBinder {
  private scratch = 0

  constructor(private readonly raw: RawAccess) {}

  /** Resets `stmt` (which also clears its earlier values, as sql.js's reset does) and binds `params`. */
  bind(stmt: Statement, params: SqlParams): void {
    stmt.reset()
    if (!Array.isArray(params)) {
      stmt.bind(params as unknown as BindParams)
      return
    }
    const values = params as readonly unknown[]
    const pointer = this.raw.pointerOf(stmt)
    const need = bytesNeeded(values)
    const borrowed = need > SCRATCH_BYTES
    const base = borrowed ? this.allocate(need) : this.scratchBlock()
    try {
      let at = base
      for (let i = 0; i < values.length; i++) {
        const v = values[i]
        let rc: number
        switch (typeof v) {
          case 'string':
          case 'bigint': {
            const text = typeof v === 'string' ? v : v.toString()
            // Fetched for each value: SQLite's copy of the one before may have grown the memory (a new buffer).
            const n = utf8Into(this.raw.heap.get(), text, at, base + need - at)
            rc = this.raw.api._sqlite3_bind_text(pointer, i + 1, at, n, SQLITE_TRANSIENT)
            at += n
            break
          }
          case 'number':
            rc = v === (v | 0) ? this.raw.api._sqlite3_bind_int(pointer, i + 1, v) : this.raw.api._sqlite3_bind_double(pointer, i + 1, v)
            break
          case 'boolean':
            rc = this.raw.api._sqlite3_bind_int(pointer, i + 1, v ? 1 : 0)
            break
          case 'object':
            if (v === null) {
              // sql.js ignored this call's result: a null past the last placeholder was accepted. So is it here, so that
              // a statement that ran before (and its journal record, replayed) runs the same.
              this.raw.api._sqlite3_bind_blob(pointer, i + 1, 0, 0, 0)
              rc = SQLITE_OK
              break
            }
            if (v instanceof Uint8Array) {
              this.raw.heap.get().set(v, at)
              rc = this.raw.api._sqlite3_bind_blob(pointer, i + 1, at, v.byteLength, SQLITE_TRANSIENT)
              at += v.byteLength
              break
            }
            throw new DatabaseError('DB_MISUSE', `cannot bind value ${i + 1}: an object that is not a Uint8Array`)
          default:
            throw new DatabaseError('DB_MISUSE', `cannot bind value ${i + 1} of type ${typeof v}`)
        }
        if (rc !== SQLITE_OK) throw new Error(this.raw.api.UTF8ToString(this.raw.api._sqlite3_errmsg(this.raw.handle)))
      }
    } finally {
      if (borrowed) this.raw.api._free(base)
    }
  }

  /** Gives the scratch block back to SQLite's allocator (the binder allocates it again if used after). */
  release(): void {
    if (this.scratch !== 0) this.raw.api._free(this.scratch)
    this.scratch = 0
  }

  private scratchBlock(): number {
    if (this.scratch === 0) this.scratch = this.allocate(SCRATCH_BYTES)
    return this.scratch
  }

  private allocate(bytes: number): number {
    const p = this.raw.api._malloc(Math.max(1, bytes))
    // As SQLite says it when its own allocation fails (asError makes it a DB_SQL error).
    if (p === 0) throw new Error(`out of memory: ${bytes} bytes of bound values`)
    return p
  }
}

/** An upper bound of the bytes `values` take encoded (exact for long strings, so a large value borrows no more than it needs). */
function bytesNeeded(values: readonly unknown[]): number {
  let n = 0
  for (const v of values) {
    if (typeof v === 'string') n += utf8Room(v)
    else if (typeof v === 'bigint') n += 24 + v.toString().length
    else if (v instanceof Uint8Array) n += v.byteLength
  }
  return n
}
