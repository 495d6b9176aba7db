import initSqlJs from 'sql.js'
import type { SqlJsStatic } from 'sql.js'

let loading: Promise<SqlJsStatic> | undefined

/** Compiles the SQLite WebAssembly module once per process; every database shares it. */
export function loadSqlJs(): Promise<SqlJsStatic> {
  loading ??= initSqlJs()
  return loading
}
