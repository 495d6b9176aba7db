import { expect } from 'chai'
import { InsertRows } from '../../../../../node/db/pg/insert-rows.js'

const step = (text: string, values: unknown[]): { text: string; values: unknown[]; name: string } => ({ text, values, name: 'parley_1' })

describe('InsertRows: multi-row forms of single-row inserts', () => {
  it('writes n rows in one statement, each row numbering its own parameters, casts and conflict clause kept', () => {
    const rows = new InsertRows()
    const text = 'INSERT INTO data (id, value, n) VALUES ($1, CAST($2 AS TEXT), $3) ON CONFLICT DO NOTHING'
    const merged = rows.merged([step(text, ['a', 'x', 1]), step(text, ['b', 'y', 2]), step(text, ['c', 'z', 3])], 7)
    expect(merged.map((s) => s.text)).to.deep.equal([
      'INSERT INTO data (id, value, n) VALUES ($1, CAST($2 AS TEXT), $3), ($4, CAST($5 AS TEXT), $6) ON CONFLICT DO NOTHING',
      text,
    ])
    expect(merged.map((s) => s.values)).to.deep.equal([['a', 'x', 1, 'b', 'y', 2], ['c', 'z', 3]])
    expect(merged.every((s) => s.group === 7)).to.equal(true)
    // Each multi-row text is prepared under a name of its own, the same one every time.
    const again = rows.merged([step(text, ['d', 'w', 4]), step(text, ['e', 'v', 5])], 8)
    expect(again[0]!.name).to.equal(merged[0]!.name).and.not.equal('parley_1')
  })

  it('slices a long run as insertRows does, so that few texts serve any count', () => {
    const rows = new InsertRows()
    const text = 'INSERT INTO t (a) VALUES ($1)'
    const merged = rows.merged(Array.from({ length: 87 }, (_, i) => step(text, [i])), 1)
    expect(merged.map((s) => (s.values as unknown[]).length)).to.deep.equal([64, 16, 4, 2, 1])
    expect(merged.flatMap((s) => s.values)).to.deep.equal(Array.from({ length: 87 }, (_, i) => i))
    expect(merged[0]!.text).to.match(/VALUES \(\$1\), \(\$2\).*\(\$64\)$/)
  })

  it('takes only inserts whose rows cannot see one another', () => {
    const rows = new InsertRows()
    rows.setTriggered(['Batches'])
    const ok = (text: string, n = 1): boolean => rows.mergeable(step(text, Array.from({ length: n }, () => 1)))
    expect(ok('INSERT INTO messages (id, hash) VALUES ($1, $2) ON CONFLICT (id, hash) DO NOTHING', 2)).to.equal(true)
    expect(ok("INSERT INTO t (a, b) VALUES ($1, '$2')"), 'a literal is no parameter').to.equal(true)
    expect(ok('INSERT INTO batches (id) VALUES ($1)'), 'a table with a trigger').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ((SELECT max(a) FROM t) + $1)'), 'a tuple that reads').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET a = t.a + 1'), 'an update on conflict').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ($1) RETURNING seq'), 'rows answered back').to.equal(false)
    expect(ok('INSERT INTO t (a, b) VALUES ($1, $2)'), 'values of another width').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ($1), ($2)', 2), 'already several rows').to.equal(false)
    expect(ok('UPDATE t SET a = $1')).to.equal(false)
    expect(rows.mergeable({ text: 'INSERT INTO t (a) VALUES (1)' })).to.equal(false)
  })
})
