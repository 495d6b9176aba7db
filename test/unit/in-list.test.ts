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
