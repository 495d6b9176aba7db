import { expect } from 'chai'
import { Connection } from '../../node/db/connection.js'
import type { Prepared } from '../../node/db/statement-cache.js'

/**
 * The connection's database lives in SQLite's own memory, not in a file of sql.js's in-memory filesystem: there,
 * every commit copied its dirty pages into the file, and the file grew 12.5 % at a time by copying itself whole
 * (most of a commit's cost, and a pause of hundreds of milliseconds once the file is large). sql.js has no way to
 * open `:memory:`, so openInMemory reaches under it; these tests fail if a sql.js upgrade changes what it relies on.
 */
describe('db: the connection holds its database in memory', function () {
  const opened: Connection[] = []
  after(function () {
    for (const c of opened) c.close()
  })

  async function open(snapshot?: Uint8Array): Promise<Connection> {
    const c = await Connection.open(snapshot)
    opened.push(c)
    return c
  }

  function rows(c: Connection, sql: string): Record<string, unknown>[] {
    return c.query(c.prepare(sql), undefined, Infinity)
  }

  function run(c: Connection, sql: string, params?: (string | number)[]): void {
    c.execute(c.prepare(sql) as Prepared, params)
  }

  it('opens main as an in-memory database (no file behind it)', async function () {
    const c = await open()
    const main = rows(c, 'SELECT name, file FROM pragma_database_list').find((r) => r['name'] === 'main')
    expect(main).to.deep.equal({ name: 'main', file: '' })
  })

  it('loads a snapshot, keeps it in memory, and exports the same rows', async function () {
    const a = await open()
    a.begin()
    a.script('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL); CREATE INDEX t_v ON t (v)')
    for (let i = 0; i < 2000; i++) run(a, 'INSERT INTO t (v) VALUES (?)', [`value ${i} ${'x'.repeat(i % 300)}`])
    a.commit()
    const image = a.export()

    const b = await open(image)
    expect(rows(b, "SELECT file FROM pragma_database_list WHERE name = 'main'")).to.deep.equal([{ file: '' }])
    expect(rows(b, 'SELECT COUNT(*) AS n, SUM(length(v)) AS len FROM t')).to.deep.equal(rows(a, 'SELECT COUNT(*) AS n, SUM(length(v)) AS len FROM t'))
    expect(rows(b, 'PRAGMA integrity_check')).to.deep.equal([{ integrity_check: 'ok' }])
    // Writable after loading, and its export loads again.
    b.begin()
    run(b, 'INSERT INTO t (v) VALUES (?)', ['after'])
    b.commit()
    const c = await open(b.export())
    expect(rows(c, "SELECT COUNT(*) AS n FROM t WHERE v = 'after'")).to.deep.equal([{ n: 1 }])
  })

  it('refuses bytes that are not a database, with SQLite’s reason', async function () {
    let failure: unknown
    try {
      await open(new Uint8Array(8192).fill(65))
    } catch (err) {
      failure = err
    }
    expect(String(failure)).to.match(/not a database|file is not a database|snapshot/i)
  })

  it('rolls back a savepoint and the whole transaction as a file database did', async function () {
    const c = await open()
    c.begin()
    c.script('CREATE TABLE t (id INTEGER PRIMARY KEY)')
    c.commit()
    c.begin()
    run(c, 'INSERT INTO t (id) VALUES (1)')
    c.savepoint()
    run(c, 'INSERT INTO t (id) VALUES (2)')
    expect(c.rollbackSavepoint()).to.equal(true)
    c.commit()
    c.begin()
    run(c, 'INSERT INTO t (id) VALUES (3)')
    c.rollback()
    expect(rows(c, 'SELECT id FROM t ORDER BY id')).to.deep.equal([{ id: 1 }])
  })
  it('reports its size as pages in use times the page size, as the pager has them, growing with the rows', async function () {
    const c = await open()
    const pagerSize = (): unknown => c.query(c.prepare('SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()'), undefined, 1)[0]?.['n']
    expect(c.sizeBytes()).to.equal(pagerSize())
    const before = c.sizeBytes()
    c.begin()
    c.script("CREATE TABLE big (v TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO big SELECT printf('%0500d', i) FROM n")
    c.commit()
    expect(c.sizeBytes()).to.equal(pagerSize())
    expect(c.sizeBytes()).to.be.above(before + 1000 * 500)
  })
})
