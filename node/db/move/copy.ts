import { createHash, type Hash } from 'node:crypto'
import { catalogOf, type Catalog } from '../catalog.js'
import type { Database } from '../engine.js'
import type { Row, SqlValue } from '../types.js'

/** Why a copy was refused or failed its check; nothing of the source was changed. */
export class CopyRefused extends Error {}

/** One table as copied: its rows, and a sha256 over them in key order (the same on both engines for the same rows). */
export interface TableCopy {
  table: string
  rows: number
  checksum: string
  /** The sequence's last number carried over, for a table that hands out numbers. */
  sequence?: number
}

export interface CopyOptions {
  /** Rows read (and written) at a time: never the whole table in memory. */
  pageRows?: number
  /** Told after each page: the table, and its rows copied so far. */
  progress?: (table: string, rows: number) => void
}

/** Values bound per INSERT statement: under SQLite's oldest limit (999), so any build of either engine takes it. */
const MAX_PARAMS = 999
const PAGE_ROWS = 500
const SCHEMA_TABLE = 'schema_migrations'

interface TableShape {
  name: string
  columns: string[]
  key: string[]
  sequenced: string | undefined
}

/**
 * Copies every row of `source` into `target`, both opened on this build's migrations (the same schema versions, as
 * `schema_migrations` is compared first), and checks the copy: per table, the row count and a content checksum read
 * back from the target equal the source's. Refuses a target holding any row, or schemas that differ. Tables go in
 * pages ordered by primary key, each page in its own transaction; tables with a trigger are filled first, so that
 * their triggers find nothing to act on (the rows they would touch arrive later, as they were). Sequences continue
 * where the source's had got to.
 */
export async function copyDatabase(source: Database, target: Database, opts: CopyOptions = {}): Promise<TableCopy[]> {
  const pageRows = opts.pageRows ?? PAGE_ROWS
  const from = catalogOf(source.dialect.engine)
  const to = catalogOf(target.dialect.engine)
  assertSameSchema(source, target)
  const shapes = tableShapes(source, from, target, to)
  for (const t of shapes) {
    if (target.get(`SELECT 1 AS x FROM ${t.name} LIMIT 1`) !== undefined) {
      throw new CopyRefused(`the target database is not empty (table ${t.name} has rows): copy into a new, empty database`)
    }
  }
  const triggered = new Set(names(target, to.triggered))
  const ordered = [...shapes.filter((t) => triggered.has(t.name)), ...shapes.filter((t) => !triggered.has(t.name))]
  const copies: TableCopy[] = []
  for (const t of ordered) {
    const copy = await copyTable(source, target, t, pageRows, opts.progress)
    if (t.sequenced !== undefined) {
      const v = sequenceValue(source, from, t.name, t.sequenced)
      if (v !== undefined) {
        await setSequence(target, to, t.name, t.sequenced, v)
        copy.sequence = v
      }
    }
    copies.push(copy)
  }
  await target.checkpoint()
  for (const c of copies) {
    const t = shapes.find((s) => s.name === c.table)!
    const back = readTable(target, t, pageRows)
    if (back.rows !== c.rows || back.checksum !== c.checksum) {
      throw new CopyRefused(`the copy of table ${c.table} differs from the source (source ${c.rows} rows, sha256 ${c.checksum}; copy ${back.rows} rows, sha256 ${back.checksum})`)
    }
    if (c.sequence !== undefined) {
      const v = sequenceValue(target, to, c.table, t.sequenced!)
      if (v !== undefined && v < c.sequence) throw new CopyRefused(`the sequence of table ${c.table} is at ${v} in the copy, ${c.sequence} in the source`)
    }
  }
  return copies.sort((a, b) => a.table.localeCompare(b.table))
}

/** Row count and checksum of every table the node's migrations made, as copyDatabase computes them. */
export function tableChecksums(db: Database, pageRows = PAGE_ROWS): TableCopy[] {
  const c = catalogOf(db.dialect.engine)
  return userTables(db, c).map((name) => readTable(db, shapeOf(db, c, name), pageRows))
}

function assertSameSchema(source: Database, target: Database): void {
  const sql = `SELECT version, checksum FROM ${SCHEMA_TABLE} ORDER BY version`
  const text = (db: Database): string =>
    db
      .all<{ version: number; checksum: string | null }>(sql)
      .map((r) => `${r.version}:${r.checksum ?? ''}`)
      .join(' ')
  const a = text(source)
  const b = text(target)
  if (a !== b) {
    const versions = (s: string): string => s.split(' ').map((x) => x.split(':')[0]).join(',') || 'none'
    throw new CopyRefused(`the schema versions differ: source ${versions(a)}, target ${versions(b)}; both must be opened by the same build of Parley`)
  }
}

function tableShapes(source: Database, from: Catalog, target: Database, to: Catalog): TableShape[] {
  const mine = userTables(source, from)
  const theirs = new Set(userTables(target, to))
  const missing = mine.filter((t) => !theirs.has(t))
  const extra = [...theirs].filter((t) => !mine.includes(t))
  if (missing.length > 0 || extra.length > 0) {
    throw new CopyRefused(`the two databases have different tables (only in the source: ${missing.join(', ') || 'none'}; only in the target: ${extra.join(', ') || 'none'})`)
  }
  return mine.map((name) => {
    const s = shapeOf(source, from, name)
    const t = shapeOf(target, to, name)
    if (s.columns.join(',') !== t.columns.join(',') || s.key.join(',') !== t.key.join(',')) {
      throw new CopyRefused(`table ${name} has columns (${s.columns.join(', ')}) in the source but (${t.columns.join(', ')}) in the target`)
    }
    return s
  })
}

function userTables(db: Database, c: Catalog): string[] {
  return names(db, c.tables).filter((t) => t !== SCHEMA_TABLE)
}

function shapeOf(db: Database, c: Catalog, table: string): TableShape {
  const columns = names(db, c.columns, [table])
  const key = names(db, c.primaryKey, [table])
  if (key.length === 0) throw new CopyRefused(`table ${table} has no primary key: it cannot be copied in key order`)
  const sequenced = names(db, c.sequenced, [table])[0]
  for (const n of [table, ...columns]) if (!/^[A-Za-z_]\w*$/.test(n)) throw new CopyRefused(`the name ${JSON.stringify(n)} in table ${table} is not a plain identifier`)
  return { name: table, columns, key, sequenced }
}

function names(db: Database, sql: string, params: string[] = []): string[] {
  return db.all<{ name: SqlValue }>(sql, params).map((r) => String(r.name))
}

function sequenceValue(db: Database, c: Catalog, table: string, column: string): number | undefined {
  const v = db.get<{ v: SqlValue }>(c.sequenceValue, [table, column])?.v
  return typeof v === 'number' && v > 0 ? v : undefined
}

async function setSequence(db: Database, c: Catalog, table: string, column: string, value: number): Promise<void> {
  await db.transaction((tx) => {
    for (const s of c.setSequence(table, column, value)) tx.run(s.sql, s.params, { rowid: false })
  })
}

/** The pages of a table in key order: keyset paging (`WHERE (key) > (last key)`), so each page costs the same. */
function* pages(db: Database, t: TableShape, pageRows: number): Generator<Row[]> {
  const cols = t.columns.join(', ')
  const order = t.key.join(', ')
  const first = `SELECT ${cols} FROM ${t.name} ORDER BY ${order} LIMIT ${pageRows}`
  const next = `SELECT ${cols} FROM ${t.name} WHERE (${order}) > (${t.key.map(() => '?').join(', ')}) ORDER BY ${order} LIMIT ${pageRows}`
  let after: SqlValue[] | undefined
  for (;;) {
    const rows = after === undefined ? db.all(first) : db.all(next, after)
    if (rows.length === 0) return
    yield rows
    if (rows.length < pageRows) return
    const last = rows[rows.length - 1]!
    after = t.key.map((k) => last[k] ?? null)
  }
}

async function copyTable(source: Database, target: Database, t: TableShape, pageRows: number, progress?: (table: string, rows: number) => void): Promise<TableCopy> {
  const hash = createHash('sha256')
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / t.columns.length))
  const head = `INSERT INTO ${t.name} (${t.columns.join(', ')}) VALUES `
  const tuple = `(${t.columns.map(() => '?').join(', ')})`
  let rows = 0
  for (const page of pages(source, t, pageRows)) {
    for (const r of page) hashRow(hash, t.columns, r)
    await target.transaction((tx) => {
      for (let i = 0; i < page.length; i += perStatement) {
        const chunk = page.slice(i, i + perStatement)
        const params: SqlValue[] = []
        for (const r of chunk) for (const c of t.columns) params.push(r[c] ?? null)
        tx.run(head + new Array(chunk.length).fill(tuple).join(', '), params, { rowid: false })
      }
    })
    rows += page.length
    progress?.(t.name, rows)
  }
  return { table: t.name, rows, checksum: hash.digest('hex') }
}

function readTable(db: Database, t: TableShape, pageRows: number): TableCopy {
  const hash = createHash('sha256')
  let rows = 0
  for (const page of pages(db, t, pageRows)) {
    for (const r of page) hashRow(hash, t.columns, r)
    rows += page.length
  }
  return { table: t.name, rows, checksum: hash.digest('hex') }
}

/**
 * One row into the checksum, each value tagged with its kind, so that the same values hash the same whichever
 * engine returned them (a BYTEA as a Buffer, a BLOB as a Uint8Array; integers as numbers on both) and different
 * ones (the text "1" and the number 1, null and "") never do.
 */
function hashRow(hash: Hash, columns: readonly string[], row: Row): void {
  for (const c of columns) {
    const v = row[c] ?? null
    if (v === null) hash.update('n;')
    else if (typeof v === 'number' || typeof v === 'bigint') hash.update(`i${String(v)};`)
    else if (typeof v === 'string') hash.update(`s${Buffer.byteLength(v)}:`).update(v, 'utf8')
    else hash.update(`b${v.byteLength}:`).update(v)
  }
  hash.update('\n')
}
