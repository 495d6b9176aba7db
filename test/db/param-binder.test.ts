import { expect } from 'chai'
import type { Database as SqlJsDatabase, Statement } from 'sql.js'
import { Connection } from '../../node/db/connection.js'
import { DatabaseError } from '../../node/db/errors.js'
import { ParamBinder } from '../../node/db/param-binder.js'
import { RowReader } from '../../node/db/row-reader.js'
import { HeapView, loadSqlJs, type RawAccess } from '../../node/db/sqljs.js'
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

  it('reads back a text that begins with U+FEFF as it was written (sql.js dropped that byte order mark)', function () {
    expect(viaConnection('SELECT ? AS v', ['\ufeffabc'])).to.deep.equal([{ v: '\ufeffabc' }])
    expect(viaSqlJs('SELECT ? AS v', ['\ufeffabc'])).to.deep.equal([{ v: 'abc' }])
  })

  it('accepts a null past the last placeholder, as sql.js did (another value there is an error, as it was)', function () {
    expect(viaConnection('SELECT ? AS v', ['x', null])).to.deep.equal(viaSqlJs('SELECT ? AS v', ['x', null]))
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

/**
 * SQLite's memory grows when an allocation does not fit, and growing replaces the ArrayBuffer every view of it was
 * made from (the old one is detached: a Buffer over it reads and writes nothing). Binding a value makes SQLite copy it,
 * and reading a text column can make SQLite add a NUL to it: both allocate. These drive the binder and the reader over
 * a fake SQLite whose every such call grows the memory, so each must fetch its view after them.
 */
describe('db: binding and reading while the memory grows', function () {
  class GrowingMemory {
    buffer = new ArrayBuffer(1 << 16)
    grows = 0
    grow(): void {
      const old = this.buffer
      const next = new ArrayBuffer(old.byteLength * 2)
      new Uint8Array(next).set(new Uint8Array(old))
      structuredClone(old, { transfer: [old] }) // detaches it, as WebAssembly.Memory#grow does
      this.buffer = next
      this.grows++
    }
  }

  function fake(memory: GrowingMemory) {
    let top = 8
    const bound: unknown[] = []
    const bytes = (at: number, n: number): Buffer => Buffer.from(memory.buffer, at, n)
    const api = {
      _malloc(n: number): number {
        while (top + n > memory.buffer.byteLength) memory.grow()
        const at = top
        top += n
        return at
      },
      _free(): void {},
      _sqlite3_bind_text(_s: number, i: number, at: number, n: number): number {
        bound[i] = bytes(at, n).toString('utf8')
        memory.grow()
        return 0
      },
      _sqlite3_bind_blob(_s: number, i: number, at: number, n: number): number {
        bound[i] = at === 0 ? null : new Uint8Array(bytes(at, n))
        memory.grow()
        return 0
      },
      _sqlite3_bind_int(_s: number, i: number, v: number): number {
        bound[i] = v
        return 0
      },
      _sqlite3_bind_double(_s: number, i: number, v: number): number {
        bound[i] = v
        return 0
      },
      _sqlite3_errmsg: (): number => 0,
      UTF8ToString: (): string => 'fake error',
    }
    const raw: RawAccess = { api: api as unknown as RawAccess['api'], heap: new HeapView(memory), handle: 1, pointerOf: () => 1 }
    const stmt = { handle: 1, reset(): void {}, bind(): void {} } as unknown as Statement
    return { api, raw, stmt, bound, put: (text: string | Uint8Array): [number, number] => {
      const b = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
      const at = api._malloc(b.byteLength)
      new Uint8Array(memory.buffer).set(b, at)
      return [at, b.byteLength]
    } }
  }

  it('binds every value of a statement whose every copy grows the memory', function () {
    const memory = new GrowingMemory()
    const { raw, stmt, bound } = fake(memory)
    const values: SqlValue[] = ['first', 'é'.repeat(100), Buffer.from([1, 2, 3]), 'z'.repeat(2000), null, 7, 'last']
    new ParamBinder(raw).bind(stmt, values)
    expect(bound.slice(1)).to.deep.equal(values.map((v) => (v instanceof Buffer ? new Uint8Array(v) : v)))
    expect(memory.grows).to.be.greaterThanOrEqual(5)
  })

  it('reads every column of a row whose every text read grows the memory', function () {
    const memory = new GrowingMemory()
    const { api, raw, stmt, put } = fake(memory)
    const columns: (string | Uint8Array)[] = ['first', 'é'.repeat(300), new Uint8Array([9, 8, 7]), 'last']
    const at = columns.map((c) => put(c))
    Object.assign(api, {
      _sqlite3_column_type: (_s: number, i: number): number => (columns[i] instanceof Uint8Array ? 4 : 3),
      _sqlite3_column_text(_s: number, i: number): number {
        memory.grow() // what adding a NUL to an unterminated text can do
        return at[i]![0]
      },
      _sqlite3_column_blob(_s: number, i: number): number {
        memory.grow()
        return at[i]![0]
      },
      _sqlite3_column_bytes: (_s: number, i: number): number => at[i]![1],
    })
    const row = new RowReader(raw).row(stmt, ['a', 'b', 'c', 'd'])
    expect(row).to.deep.equal({ a: 'first', b: 'é'.repeat(300), c: new Uint8Array([9, 8, 7]), d: 'last' })
    expect(memory.grows).to.be.greaterThanOrEqual(4)
  })
})
