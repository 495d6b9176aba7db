import { expect } from 'chai'
import { Connection } from '../../../../node/db/connection.js'
import { insertRows, TEXT_FROM_BYTES, writeRows } from '../../../../node/db/in-list.js'
import { PgDatabase } from '../../../../node/db/pg/pg-database.js'
import type { SqlParams, SqlValue, Tx } from '../../../../node/db/types.js'
import { testDatabase } from '../../../support/postgres.js'

/** A transaction that only records what it is asked to run. */
function recordingTx(): { tx: Tx; runs: { sql: string; params: SqlParams | undefined }[]; writes: { sql: string; params: SqlParams | undefined }[] } {
  const runs: { sql: string; params: SqlParams | undefined }[] = []
  const writes: { sql: string; params: SqlParams | undefined }[] = []
  const tx: Tx = {
    run(sql, params) {
      runs.push({ sql, params })
      return { changes: 0, lastInsertRowid: 0 }
    },
    write(sql, params) {
      writes.push({ sql, params })
    },
    all: () => [],
    get: () => undefined,
    exec: () => {},
  }
  return { tx, runs, writes }
}

/** The statement text as insertRows has always written it. */
const expected = (head: string, tail: string, size: number, row: string): string => `${head} VALUES ${new Array<string>(size).fill(row).join(', ')} ${tail}`

describe('insertRows: statement texts', () => {
  it('writes slices of 64, 32, ..., 1 rows with the same texts, call after call, and binds the rows in order', () => {
    const rows = Array.from({ length: 100 }, (_, i) => [i, `v${i}`])
    for (let round = 0; round < 2; round++) {
      const { tx, runs } = recordingTx()
      const out = insertRows(tx, 'INSERT INTO t (a, b)', 'ON CONFLICT (a) DO NOTHING', rows)
      expect(out.map((o) => o.rows)).to.deep.equal([64, 32, 4])
      expect(runs.map((r) => r.sql)).to.deep.equal([64, 32, 4].map((n) => expected('INSERT INTO t (a, b)', 'ON CONFLICT (a) DO NOTHING', n, '(?, ?)')))
      expect(runs.flatMap((r) => r.params as unknown[])).to.deep.equal(rows.flat())
    }
  })

  it('writeRows sends the same statements and values as writes whose result is not read', () => {
    const rows = Array.from({ length: 37 }, (_, i) => [i, `v${i}`])
    const a = recordingTx()
    insertRows(a.tx, 'INSERT INTO t (a, b)', '', rows)
    const b = recordingTx()
    writeRows(b.tx, 'INSERT INTO t (a, b)', '', rows)
    expect(b.runs).to.deep.equal([])
    expect(b.writes).to.deep.equal(a.runs)
  })

  it('keeps texts of different heads, tails, widths and placeholders apart', () => {
    const { tx, runs } = recordingTx()
    insertRows(tx, 'INSERT INTO t (a)', '', [[1]])
    insertRows(tx, 'INSERT INTO t (a, b)', '', [[1, 2]])
    insertRows(tx, 'INSERT INTO t (a, b)', 'ON CONFLICT DO NOTHING', [[1, 2]])
    insertRows(tx, 'INSERT INTO t (a, b)', '', [[1, 'x']], ['?', TEXT_FROM_BYTES])
    insertRows(tx, 'INSERT INTO t (a)', '', [[1], [2]])
    expect(runs.map((r) => r.sql)).to.deep.equal([
      expected('INSERT INTO t (a)', '', 1, '(?)'),
      expected('INSERT INTO t (a, b)', '', 1, '(?, ?)'),
      expected('INSERT INTO t (a, b)', 'ON CONFLICT DO NOTHING', 1, '(?, ?)'),
      expected('INSERT INTO t (a, b)', '', 1, `(?, ${TEXT_FROM_BYTES})`),
      expected('INSERT INTO t (a)', '', 2, '(?)'),
    ])
  })
})

describe('insertRows: bound values', () => {
  it('binds exactly the values of rows.flat(), in order, for every slice size, nulls and bytes included', () => {
    const bytes = new Uint8Array([1, 2, 3])
    for (const count of [1, 2, 3, 63, 64, 65, 127, 128, 129, 200]) {
      const rows = Array.from({ length: count }, (_, i) => [i, `v${i}`, i % 3 === 0 ? null : bytes, BigInt(i)])
      const { tx, runs } = recordingTx()
      insertRows(tx, 'INSERT INTO t (a, b, c, d)', '', rows)
      const bound = runs.flatMap((r) => r.params as unknown[])
      expect(bound).to.deep.equal(rows.flat())
      for (const r of runs) expect(Object.keys(r.params as unknown[]).length, 'no holes').to.equal((r.params as unknown[]).length)
    }
  })

  it('refuses rows of unequal widths rather than bind a shifted row', () => {
    const { tx } = recordingTx()
    expect(() => insertRows(tx, 'INSERT INTO t (a, b)', '', [[1, 2], [3, 4, 5]])).to.throw(/row 1 has 3 values, the first has 2/)
    expect(() => insertRows(tx, 'INSERT INTO t (a, b)', '', [[1, 2], [3]])).to.throw(/row 1 has 1 values/)
  })
})

describe('insertRows: a string every row of a slice shares', () => {
  it('is bound once, as a numbered parameter each row refers to; the other values follow row by row', () => {
    const { tx, runs } = recordingTx()
    insertRows(tx, 'INSERT INTO t (a, b, c)', '', [
      ['s', 1, 'x'],
      ['s', 2, 'y'],
      ['s', 3, 'z'],
    ])
    expect(runs.map((r) => r.sql)).to.deep.equal(['INSERT INTO t (a, b, c) VALUES (?1, ?2, ?3), (?1, ?4, ?5) ', 'INSERT INTO t (a, b, c) VALUES (?, ?, ?) '])
    expect(runs.map((r) => r.params)).to.deep.equal([
      ['s', 1, 'x', 2, 'y'],
      ['s', 3, 'z'],
    ])
    // Its own placeholder keeps its shape; a number or null the rows share is bound once too, bytes in each row still.
    const again = recordingTx()
    const bytes = new Uint8Array([1])
    insertRows(again.tx, 'INSERT INTO t (a, b, c, d)', '', [
      [7, 'p', null, bytes],
      [7, 'p', null, bytes],
    ], ['?', TEXT_FROM_BYTES, '?', '?'])
    expect(again.runs[0]!.sql).to.equal('INSERT INTO t (a, b, c, d) VALUES (?1, CAST(?2 AS TEXT), ?3, ?4), (?1, CAST(?2 AS TEXT), ?3, ?5) ')
    expect(again.runs[0]!.params).to.deep.equal([7, 'p', null, bytes, bytes])
  })

  it('takes no -0 for 0 (Object.is): such numbers stay in their rows', () => {
    const { tx, runs } = recordingTx()
    insertRows(tx, 'INSERT INTO z (a, b, c)', '', [
      [0, NaN, 1],
      [-0, NaN, 1],
    ])
    expect(runs[0]!.sql).to.equal('INSERT INTO z (a, b, c) VALUES (?3, ?1, ?2), (?4, ?1, ?2) ')
    expect(runs[0]!.params).to.deep.equal([NaN, 1, 0, -0])
  })

  it('writes one shape with at most 16 sets of shared columns: rows that share others bind every value', () => {
    const { tx, runs } = recordingTx()
    // Two rows of five text columns; pattern p makes the columns of p's bits equal in both rows.
    const head = 'INSERT INTO capped (a, b, c, d, e)'
    for (let p = 1; p <= 20; p++) insertRows(tx, head, '', [0, 1].map((r) => [0, 1, 2, 3, 4].map((c) => (p & (1 << c) ? `same${c}` : `r${r}c${c}`))))
    const numbered = runs.filter((r) => r.sql.includes('?1'))
    expect(numbered).to.have.length(16)
    expect(runs.slice(16).map((r) => r.sql)).to.deep.equal(new Array(4).fill(expected(head, '', 2, '(?, ?, ?, ?, ?)')))
    // A set already written is still used.
    insertRows(tx, head, '', [['same0', 'x', 'y', 'z', 'w'], ['same0', 'x2', 'y2', 'z2', 'w2']])
    expect(runs.at(-1)!.sql).to.equal(runs[0]!.sql)
  })

  it('stores exactly the rows given, in SQLite, whichever columns their slices share', async () => {
    const conn = await Connection.open()
    try {
      conn.script('CREATE TABLE t (seq INTEGER PRIMARY KEY, a TEXT, b INTEGER, c TEXT, d TEXT, e BLOB)')
      // Slices of 64, 32, 4 and 1: a shared in all, b (a number) in the last 37, c in the first 64 only, d (a null) in
      // the first 64, some long text as bytes.
      const rows = Array.from({ length: 101 }, (_, i) => ['same', i < 64 ? i : 7, i < 64 ? 'first' : `c${i}`, i < 64 ? null : `d${i}`, new Uint8Array([i])])
      const tx: Tx = {
        run: (sql, params) => conn.execute(conn.prepare(sql), params),
        write: (sql, params) => void conn.execute(conn.prepare(sql), params),
        all: () => [],
        get: () => undefined,
        exec: () => {},
      }
      conn.begin()
      const out = insertRows(tx, 'INSERT INTO t (a, b, c, d, e)', '', rows, ['?', '?', TEXT_FROM_BYTES, '?', '?'])
      conn.commit()
      expect(out.map((o) => [o.rows, o.result.changes])).to.deep.equal([[64, 64], [32, 32], [4, 4], [1, 1]])
      const read = conn.query(conn.prepare('SELECT a, b, c, d, e FROM t ORDER BY seq'), undefined, Infinity)
      expect(read.map((r) => [r['a'], r['b'], r['c'], r['d'], r['e']])).to.deep.equal(rows)
    } finally {
      conn.close()
    }
  })

  it('stores exactly the rows given in PostgreSQL too: shared numbered parameters, text bound as bytes', async () => {
    const d = await testDatabase({ empty: true })
    const db = await PgDatabase.open({ url: d.url, migrations: [{ version: 1, name: 't', up: 'CREATE TABLE t (seq INTEGER PRIMARY KEY, a TEXT, b INTEGER, c TEXT, d INTEGER, e BLOB)' }] })
    try {
      // A number (b) and a null (d, an INTEGER column here) shared by a slice: typed by their column, as a row's own are.
      const rows = Array.from({ length: 101 }, (_, i) => ['same', i < 64 ? i : 7, i < 64 ? 'first' : `c${i}`, i < 64 ? null : i, new Uint8Array([i])])
      const bytes: SqlValue[][] = rows.map(([a, b, c, dd, e]) => [a!, b!, Buffer.from(c as string, 'utf8'), dd!, e!])
      const out = await db.transaction((tx) => insertRows(tx, 'INSERT INTO t (a, b, c, d, e)', '', bytes, ['?', '?', TEXT_FROM_BYTES, '?', '?']))
      expect(out.map((o) => [o.rows, o.result.changes])).to.deep.equal([[64, 64], [32, 32], [4, 4], [1, 1]])
      const read = db.all('SELECT a, b, c, d, e FROM t ORDER BY seq')
      expect(read.map((r) => [r['a'], r['b'], r['c'], r['d'], r['e']])).to.deep.equal(rows)
    } finally {
      await db.close()
      await d.drop()
    }
  })
})
