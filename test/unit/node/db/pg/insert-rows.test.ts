import { expect } from 'chai'
import { InsertRows } from '../../../../../node/db/pg/insert-rows.js'

const step = (text: string, values: unknown[]): { text: string; values: unknown[]; name: string } => ({ text, values, name: 'parley_1' })
/** Whether `s` is a single-row INSERT the rows may merge: it names the table it writes. */
const mergeable = (rows: InsertRows, s: Parameters<InsertRows['tableOf']>[0]): boolean => rows.tableOf(s) !== undefined

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
    rows.setLinked(['Batches'])
    const ok = (text: string, n = 1): boolean => mergeable(rows, step(text, Array.from({ length: n }, () => 1)))
    expect(ok('INSERT INTO messages (id, hash) VALUES ($1, $2) ON CONFLICT (id, hash) DO NOTHING', 2)).to.equal(true)
    expect(ok("INSERT INTO t (a, b) VALUES ($1, '$2')"), 'a literal is no parameter').to.equal(true)
    expect(ok('INSERT INTO batches (id) VALUES ($1)'), 'a table with a trigger or a foreign key').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ((SELECT max(a) FROM t) + $1)'), 'a tuple that reads').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET a = t.a + 1'), 'an update on conflict').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ($1) RETURNING seq'), 'rows answered back').to.equal(false)
    expect(ok('INSERT INTO t (a, b) VALUES ($1, $2)'), 'values of another width').to.equal(false)
    expect(ok('INSERT INTO t (a) VALUES ($1), ($2)', 2), 'already several rows').to.equal(false)
    expect(ok('UPDATE t SET a = $1')).to.equal(false)
    expect(mergeable(rows, { text: 'INSERT INTO t (a) VALUES (1)' })).to.equal(false)
  })

  it('answers the table a mergeable insert writes, and nothing for any other statement', () => {
    const rows = new InsertRows()
    expect(rows.tableOf(step('INSERT INTO Messages (id) VALUES ($1) ON CONFLICT DO NOTHING', [1]))).to.equal('messages')
    expect(rows.tableOf(step('UPDATE messages SET id = $1', [1]))).to.equal(undefined)
  })

  it('keeps no statement above 65,535 parameters: wide rows go in smaller slices, a wider row alone', () => {
    const rows = new InsertRows()
    const width = 1100
    const text = `INSERT INTO wide (${Array.from({ length: width }, (_, k) => `c${k}`).join(', ')}) VALUES (${Array.from({ length: width }, (_, k) => `$${k + 1}`).join(', ')})`
    const merged = rows.merged(Array.from({ length: 64 }, (_, i) => step(text, Array.from({ length: width }, () => i))), 1)
    // 59 rows would fit; the largest slice that does is 32.
    expect(merged.map((s) => (s.values as unknown[]).length)).to.deep.equal([32 * width, 32 * width])
    const widest = `INSERT INTO wide (a) VALUES (${Array.from({ length: 65_536 }, (_, k) => `$${k + 1}`).join(', ')})`
    expect(mergeable(rows, step(widest, Array.from({ length: 65_536 }, () => 1)))).to.equal(false)
  })

  it('takes no new text once 256 shapes are kept, and texts it refuses do not count', () => {
    const rows = new InsertRows()
    for (let i = 0; i < 300; i++) expect(mergeable(rows, step(`UPDATE t${i} SET a = $1`, [1]))).to.equal(false)
    for (let i = 0; i < 256; i++) expect(mergeable(rows, step(`INSERT INTO t${i} (a) VALUES ($1)`, [1])), `shape ${i}`).to.equal(true)
    const late = step('INSERT INTO late (a) VALUES ($1)', [1])
    expect(mergeable(rows, late), 'a text past the cap').to.equal(false)
    // A kept shape merges as before, under the same prepared name each time.
    const kept = step('INSERT INTO t3 (a) VALUES ($1)', [1])
    expect(mergeable(rows, kept)).to.equal(true)
    expect(rows.merged([kept, kept], 1)[0]!.name).to.equal(rows.merged([kept, kept], 2)[0]!.name)
  })
})
