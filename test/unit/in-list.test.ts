import { expect } from 'chai'
import { insertRows, TEXT_FROM_BYTES } from '../../node/db/in-list.js'
import type { SqlParams, Tx } from '../../node/db/types.js'

/** A transaction that only records what it is asked to run. */
function recordingTx(): { tx: Tx; runs: { sql: string; params: SqlParams | undefined }[] } {
  const runs: { sql: string; params: SqlParams | undefined }[] = []
  const tx: Tx = {
    run(sql, params) {
      runs.push({ sql, params })
      return { changes: 0, lastInsertRowid: 0 }
    },
    all: () => [],
    get: () => undefined,
    exec: () => {},
  }
  return { tx, runs }
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
