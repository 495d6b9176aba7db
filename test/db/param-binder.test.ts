import { expect } from 'chai'
import type { Database as SqlJsDatabase } from 'sql.js'
import { Connection } from '../../node/db/connection.js'
import { DatabaseError } from '../../node/db/errors.js'
import { loadSqlJs } from '../../node/db/sqljs.js'
import type { Row, SqlParams, SqlValue } from '../../node/db/types.js'

/**
 * The connection binds and reads values through SQLite's C API (node/db/param-binder.ts, row-reader.ts) instead of
 * sql.js's `bind` and `get`. Every value must reach SQLite, and come back, as the same type and bytes as through
 * sql.js, or live execution and anything compared with earlier data would disagree; these tests compare the two
 * ways value by value.
 */
describe('db: values are bound and read as sql.js binds and reads them', function () {
  let conn: Connection
  let plain: SqlJsDatabase

  before(async function () {
    conn = await Connection.open()
    plain = new (await loadSqlJs()).SQL.Database()
  })
  after(function () {
    conn.close()
    plain.close()
  })

  const PROBE = 'SELECT typeof(?1) AS type, length(?1) AS len, hex(substr(CAST(?1 AS BLOB), 1, 24)) AS head, hex(substr(CAST(?1 AS BLOB), -24)) AS tail, ?1 = ?2 AS same'

  function viaConnection(sql: string, params: SqlParams): Row[] {
    return conn.query(conn.prepare(sql), params, Infinity)
  }

  function viaSqlJs(sql: string, params: SqlValue[]): Row[] {
    const stmt = plain.prepare(sql)
    try {
      stmt.bind(params as never)
      const rows: Row[] = []
      while (stmt.step()) rows.push(stmt.getAsObject() as Row)
      return rows
    } finally {
      stmt.free()
    }
  }

  const values: [string, SqlValue | boolean][] = [
    ['empty text', ''],
    ['ASCII', 'abc'],
    ['64 ASCII characters (the loop)', 'x'.repeat(64)],
    ['65 ASCII characters (Buffer)', 'x'.repeat(65)],
    ['short text with an accent', 'café'],
    ['an emoji (a surrogate pair)', 'emoji \u{1f600} here'],
    ['NUL inside text', 'a\u0000b'],
    ['long ASCII', 'y'.repeat(5000)],
    ['long non-ASCII', 'é中'.repeat(3000)],
    ['zero', 0],
    ['negative', -1],
    ['largest 32-bit integer', 2 ** 31 - 1],
    ['past 32 bits (bound as REAL)', 2 ** 31],
    ['smallest 32-bit integer', -(2 ** 31)],
    ['a fraction', 1.5],
    ['2^53', 2 ** 53],
    ['infinity', Infinity],
    ['NaN (SQLite makes it NULL)', NaN],
    ['a bigint (as its digits)', 10n ** 30n],
    ['true', true],
    ['false', false],
    ['null', null],
    ['an empty blob', new Uint8Array(0)],
    ['a Buffer', Buffer.from([0, 1, 2, 255])],
    ['a large blob', new Uint8Array(300_000).map((_, i) => i % 251)],
  ]

  for (const [name, value] of values) {
    it(`binds ${name} as sql.js does`, function () {
      const params = [value, value] as SqlValue[]
      expect(viaConnection(PROBE, params)).to.deep.equal(viaSqlJs(PROBE, params))
    })
  }

  for (const [name, value] of values) {
    it(`reads ${name} back as sql.js does, as its own type, as a blob and as text`, function () {
      const sql = 'SELECT ?1 AS v, CAST(?1 AS BLOB) AS b, CAST(?1 AS TEXT) AS t, CAST(?1 AS REAL) AS r'
      expect(viaConnection(sql, [value as SqlValue])).to.deep.equal(viaSqlJs(sql, [value as SqlValue]))
    })
  }

  it('binds a whole row of mixed values, in order', function () {
    const row: SqlValue[] = ['id-1', 7, null, 'ünïcödé', 2.25, Buffer.from('bytes'), 'z'.repeat(1500), 10n]
    const sql = `SELECT ${row.map((_, i) => `?${i + 1} AS v${i}, typeof(?${i + 1}) AS t${i}`).join(', ')}`
    expect(viaConnection(sql, row)).to.deep.equal(viaSqlJs(sql, row))
  })

  it('round-trips values larger than its scratch block, and small ones after them', function () {
    const big = 'ä'.repeat(400_000) + 'end'
    expect(viaConnection('SELECT ? AS v', [big])).to.deep.equal([{ v: big }])
    expect(viaConnection('SELECT ? AS a, ? AS b', ['small', 'ö'])).to.deep.equal([{ a: 'small', b: 'ö' }])
  })

  it("keeps binding correctly after SQLite's memory has grown", async function () {
    // Tens of MiB of rows make the WebAssembly memory grow, which replaces the buffer a view of it was made from.
    const { memory } = await loadSqlJs()
    const first = memory.buffer
    conn.begin()
    conn.script('CREATE TABLE grow (v TEXT NOT NULL)')
    const chunk = 'g'.repeat(1 << 20)
    let rows = 0
    while (memory.buffer === first && rows < 3000) conn.execute(conn.prepare('INSERT INTO grow (v) VALUES (?)'), [`${rows++}:${chunk}`], false)
    conn.commit()
    expect(memory.buffer, 'the memory grew').to.not.equal(first)
    expect(viaConnection('SELECT ? AS a, ? AS b', ['after growing', 'é'.repeat(2000)])).to.deep.equal([{ a: 'after growing', b: 'é'.repeat(2000) }])
    expect(viaConnection("SELECT count(*) AS n FROM grow WHERE substr(v, -3) = ? AND v = (CAST(rowid - 1 AS TEXT) || ':' || ?)", ['ggg', chunk])).to.deep.equal([{ n: rows }])
    conn.begin()
    conn.script('DROP TABLE grow')
    conn.commit()
  })

  it('binds every value right when copying one of them grows the memory, mid-statement', async function () {
    const { memory } = await loadSqlJs()
    // SQLite copies each value as it is bound (SQLITE_TRANSIENT): a copy can grow the memory, after which values
    // must be written through a view of the new buffer. Larger values until one statement's binding grew it.
    let grew = false
    for (let mib = 4; !grew && mib <= 256; mib *= 2) {
      const values = ['a', 'b', 'c'].map((c) => c.repeat(mib << 20))
      const before = memory.buffer
      const [row] = viaConnection('SELECT length(?1) AS a, length(?2) AS b, length(?3) AS c, substr(?3, -2) AS end', values)
      grew = memory.buffer !== before
      expect(row).to.deep.equal({ a: mib << 20, b: mib << 20, c: mib << 20, end: 'cc' })
    }
    expect(grew, 'a statement grew the memory').to.equal(true)
  })

  it("encodes a lone surrogate as Buffer does (U+FFFD), the same text the journal replays", function () {
    const text = 'a\ud800b'
    const replayed = Buffer.from(text, 'utf8').toString('utf8')
    expect(viaConnection('SELECT ? AS v', [text])).to.deep.equal([{ v: replayed }])
    expect(viaConnection('SELECT ? AS v', [replayed])).to.deep.equal([{ v: replayed }])
  })

  it('still binds named values through sql.js', function () {
    expect(viaConnection('SELECT :a AS a, :b AS b', { ':a': 'x', ':b': 2 })).to.deep.equal([{ a: 'x', b: 2 }])
  })

  it('fails with a clear error for a value it cannot bind, or one too many', function () {
    const failure = (params: unknown[]): unknown => {
      try {
        viaConnection('SELECT ? AS v', params as SqlValue[])
      } catch (err) {
        return err
      }
      return undefined
    }
    const tooMany = failure(['a', 'b'])
    expect(tooMany).to.be.instanceOf(DatabaseError)
    expect((tooMany as DatabaseError).code).to.equal('DB_SQL')
    expect((tooMany as Error).message).to.match(/out of range/)
    for (const bad of [{ not: 'a value' }, undefined, Symbol('s')]) {
      const err = failure([bad])
      expect(err, String(bad?.toString())).to.be.instanceOf(DatabaseError)
      expect((err as DatabaseError).code).to.equal('DB_MISUSE')
    }
    // The statement and the connection are usable after a failed bind.
    expect(viaConnection('SELECT ? AS v', ['fine'])).to.deep.equal([{ v: 'fine' }])
  })
})
