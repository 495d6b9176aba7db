import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import initSqlJs from 'sql.js'
import type { Database as SqlJsDatabase, SqlJsStatic, Statement } from 'sql.js'

let loading: Promise<LoadedSqlJs> | undefined
const MEMORY_KEY = Symbol.for('parley.sqljs.memory')

/** sql.js's module, and the memory of its WebAssembly instance (which sql.js does not export). */
export interface LoadedSqlJs {
  SQL: SqlJsStatic
  memory: WasmMemory
}

/** A WebAssembly.Memory: `buffer` is replaced (the old one detached) whenever the memory grows. */
export interface WasmMemory {
  readonly buffer: ArrayBuffer
}

/** The two WebAssembly constructors used here (this project's TypeScript libraries do not declare them). */
const Wasm = (globalThis as unknown as {
  WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object, imports: object) => { exports: Record<string, unknown> }; Memory: new (d: { initial: number }) => WasmMemory }
}).WebAssembly

/**
 * Compiles the SQLite WebAssembly module once per process; every database shares it.
 *
 * Compiled synchronously (`new WebAssembly.Module`), not by sql.js's own `WebAssembly.instantiate`: after an
 * asynchronous compile, V8 held the event loop while it optimised the functions the first statements made hot,
 * ~200 ms at every start with nothing else able to run (timers, I/O callbacks); compiled synchronously, that
 * optimisation runs on background threads while the loop goes on. The module is the same either way.
 */
export function loadSqlJs(): Promise<LoadedSqlJs> {
  loading ??= (async () => {
    // Compiled here rather than inside the hook, so that a missing or broken .wasm rejects this promise.
    const module = new Wasm.Module(readFileSync(createRequire(import.meta.url).resolve('sql.js/dist/sql-wasm.wasm')))
    let memory: WasmMemory | undefined
    const SQL = await initSqlJs({
      instantiateWasm(imports, ready) {
        const instance = new Wasm.Instance(module, imports)
        memory = Object.values(instance.exports).find((e): e is WasmMemory => e instanceof Wasm.Memory)
        ready(instance as unknown as Parameters<typeof ready>[0])
        return undefined
      },
    })
    // sql.js instantiates once per process and answers later calls with that module, without calling the hook: kept
    // on the module itself, the memory is found again by a second copy of this file (a test run can load two).
    const holder = SQL as unknown as Record<symbol, WasmMemory | undefined>
    if (memory) holder[MEMORY_KEY] = memory
    else memory = holder[MEMORY_KEY]
    if (!memory) throw new Error('sql.js: its WebAssembly instance exports no memory (has sql.js changed?)')
    return { SQL, memory }
  })()
  return loading
}

/**
 * The C functions sql.js exports on its module object (its `Module`), which its typings leave out. Only these are
 * used, each as SQLite documents it.
 */
export interface SqliteExports {
  _malloc(bytes: number): number
  _free(ptr: number): void
  stringToNewUTF8(s: string): number
  _sqlite3_open(filename: number, ppDb: number): number
  _sqlite3_close_v2(db: number): number
  _sqlite3_errmsg(db: number): number
  UTF8ToString(ptr: number): string
  _sqlite3_bind_blob(stmt: number, index: number, value: number, bytes: number, destructor: number): number
  _sqlite3_bind_text(stmt: number, index: number, value: number, bytes: number, destructor: number): number
  _sqlite3_bind_int(stmt: number, index: number, value: number): number
  _sqlite3_bind_double(stmt: number, index: number, value: number): number
  _sqlite3_column_type(stmt: number, column: number): number
  _sqlite3_column_double(stmt: number, column: number): number
  _sqlite3_column_text(stmt: number, column: number): number
  _sqlite3_column_blob(stmt: number, column: number): number
  _sqlite3_column_bytes(stmt: number, column: number): number
  _sqlite3_sql(stmt: number): number
  _sqlite3_backup_init(dest: number, destName: number, source: number, sourceName: number): number
  _sqlite3_backup_step(backup: number, pages: number): number
  _sqlite3_backup_finish(backup: number): number
  _RegisterExtensionFunctions(db: number): number
}

/** sql.js's Database as it is at run time: `db` is the sqlite3* it runs every statement on. */
interface HandleHolder {
  db: number
}

export const SQLITE_OK = 0
const SQLITE_DONE = 101
/** sqlite3_destructor_type SQLITE_TRANSIENT: SQLite copies the bound bytes before the call returns. */
export const SQLITE_TRANSIENT = -1
const PROBE_SQL = 'SELECT ?'

/**
 * Opens a database whose pages live in SQLite's own memory (`:memory:`), loaded from `snapshot` when given.
 *
 * sql.js always opens its database as a file of Emscripten's in-memory filesystem. SQLite then writes every page a
 * commit dirtied into that file, and the file grows by 12.5 % at a time, each time allocating and copying the whole
 * file: that is over 90 % of a commit's cost (19 % of a receiving member's CPU), and at a few
 * hundred MiB one growth holds the event loop for hundreds of milliseconds. A `:memory:` database keeps its pages
 * where SQLite made them: a commit only drops the rollback journal.
 *
 * sql.js offers no way to open one, so this opens its usual database (for the object and its statement API), opens
 * `:memory:` through the C API sql.js exports, copies the snapshot in with SQLite's backup API, and puts the new
 * handle in place of the file-backed one before anything else has used it. `export()` still works: sql.js exports
 * through the backup API from whatever handle the object holds. If a sql.js upgrade changes what this relies on,
 * opening fails here with the reason (test/db checks that the main database is in memory).
 */
export async function openInMemory(snapshot?: Uint8Array): Promise<SqlJsDatabase> {
  return (await openInMemoryRaw(snapshot)).db
}

/** What a caller that binds or reads through SQLite's C API (param-binder.ts, row-reader.ts) needs beside the database. */
export interface RawAccess {
  api: SqliteExports
  /** SQLite's memory. */
  heap: HeapView
  /** The sqlite3* every statement of the database runs on. */
  handle: number
  /** The sqlite3_stmt* behind a sql.js Statement. */
  pointerOf(stmt: Statement): number
}

/** openInMemory, and the raw access to it. */
export async function openInMemoryRaw(snapshot?: Uint8Array): Promise<{ db: SqlJsDatabase; raw: RawAccess }> {
  const { SQL, memory } = await loadSqlJs()
  const api = SQL as unknown as SqliteExports
  const heap = new HeapView(memory)
  const db = new SQL.Database()
  let handle = 0
  let statementKey: string
  try {
    statementKey = statementPointerKey(api, db)
    handle = openMemoryHandle(api, heap)
    if (snapshot) copySnapshotInto(SQL, api, handle, snapshot)
    // What sql.js registers on every handle it opens (its extension functions), so SQL behaves as before.
    api._RegisterExtensionFunctions(handle)
  } catch (err) {
    if (handle !== 0) api._sqlite3_close_v2(handle)
    db.close()
    throw err
  }
  const holder = db as unknown as HandleHolder
  const fileBacked = holder.db
  holder.db = handle
  api._sqlite3_close_v2(fileBacked)
  const pointerOf = (stmt: Statement): number => (stmt as unknown as Record<string, number>)[statementKey]!
  return { db, raw: { api, heap, handle, pointerOf } }
}

/** SQLite's memory as a Buffer, made again after the memory grew (growing replaces its ArrayBuffer). */
export class HeapView {
  private view: Buffer | undefined

  constructor(private readonly memory: WasmMemory) {}

  get(): Buffer {
    const buffer = this.memory.buffer
    if (this.view?.buffer !== buffer) this.view = Buffer.from(buffer)
    return this.view
  }
}

/** `sqlite3_open(":memory:", &db)`, the handle read back from SQLite's memory. */
function openMemoryHandle(api: SqliteExports, heap: HeapView): number {
  const out = api._malloc(8)
  const name = api.stringToNewUTF8(':memory:')
  try {
    const rc = api._sqlite3_open(name, out)
    const handle = heap.get().readUInt32LE(out)
    if (rc !== SQLITE_OK) {
      const why = handle !== 0 ? api.UTF8ToString(api._sqlite3_errmsg(handle)) : `code ${rc}`
      if (handle !== 0) api._sqlite3_close_v2(handle)
      throw new Error(`sqlite3_open(":memory:") failed: ${why}`)
    }
    return handle
  } finally {
    api._free(name)
    api._free(out)
  }
}

/**
 * The property of a sql.js Statement that holds its sqlite3_stmt*, a name sql.js's minifier chose: found by asking
 * SQLite which numeric property of a probe statement is a statement with the probe's text.
 */
function statementPointerKey(api: SqliteExports, db: SqlJsDatabase): string {
  const probe = db.prepare(PROBE_SQL)
  try {
    for (const [key, value] of Object.entries(probe)) {
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) continue
      try {
        const sql = api._sqlite3_sql(value)
        if (sql !== 0 && api.UTF8ToString(sql) === PROBE_SQL) return key
      } catch {
        // Not a statement: reading through it trapped. Try the next property.
      }
    }
  } finally {
    probe.free()
  }
  throw new Error('sql.js: cannot find the statement handle of a prepared statement (has sql.js changed?)')
}

/** Copies every page of `snapshot` into the database `dest` with SQLite's backup API. */
function copySnapshotInto(SQL: SqlJsStatic, api: SqliteExports, dest: number, snapshot: Uint8Array): void {
  const source = new SQL.Database(snapshot)
  const main = api.stringToNewUTF8('main')
  try {
    const sourceHandle = (source as unknown as HandleHolder).db
    const backup = api._sqlite3_backup_init(dest, main, sourceHandle, main)
    if (backup === 0) throw new Error(`loading the snapshot failed: ${api.UTF8ToString(api._sqlite3_errmsg(dest))}`)
    const stepped = api._sqlite3_backup_step(backup, -1)
    const finished = api._sqlite3_backup_finish(backup)
    if (stepped !== SQLITE_DONE || finished !== SQLITE_OK) {
      throw new Error(`loading the snapshot failed (backup step ${stepped}, finish ${finished}): ${api.UTF8ToString(api._sqlite3_errmsg(dest))}`)
    }
  } finally {
    api._free(main)
    source.close()
  }
}
