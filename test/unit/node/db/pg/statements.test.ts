import { expect } from 'chai'
import { isParleyError } from '../../../../../node/core/errors.js'
import { DatabaseError } from '../../../../../node/db/errors.js'
import { isConnectionLoss } from '../../../../../node/db/pg/bridge-protocol.js'
import { errorOf, PgStatements, stepOf, unavailableOf } from '../../../../../node/db/pg/statements.js'
import { IN_LIST, inList, TEXT_FROM_BYTES } from '../../../../../node/db/in-list.js'

const where = 'postgres://parley:***@db.example:5432/member'

/** What a failed PostgreSQL statement becomes for the node: the API's status follows from it. */
describe('PostgreSQL engine: failures as the node errors', () => {
  it('takes a cancelled statement and a read-only server for unavailable, and a client-side error for nothing of the kind', () => {
    expect(isConnectionLoss('57014'), 'statement timeout').to.equal(true)
    expect(isConnectionLoss('25006'), 'read-only transaction (a standby after failover)').to.equal(true)
    expect(isConnectionLoss('08006')).to.equal(true)
    expect(isConnectionLoss('57P01')).to.equal(true)
    expect(isConnectionLoss(undefined), 'no SQLSTATE: pg refused the request itself').to.equal(false)
    expect(isConnectionLoss('42P01')).to.equal(false)
  })

  it('answers an unavailable failure as DB_UNAVAILABLE naming the database', () => {
    const e = errorOf({ message: 'cannot execute INSERT in a read-only transaction', sqlState: '25006', unavailable: true }, where, 'INSERT INTO t VALUES (1)')
    expect(e).to.be.instanceOf(DatabaseError)
    expect(e.message).to.equal(`DB_UNAVAILABLE: the database ${where} is unavailable: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)`)
  })

  it("answers a full disk (53100) as the node's STORAGE_FULL, as on sql.js", () => {
    const e = errorOf({ message: 'could not extend file "base/16384/16385": No space left on device', sqlState: '53100', unavailable: false }, where, 'INSERT INTO t VALUES (1)')
    expect(isParleyError(e, 'STORAGE_FULL')).to.equal(true)
    expect(e.message).to.contain(where).and.contain('No space left on device')
  })

  it('keeps DB_CONSTRAINT and DB_SQL for what the statement did wrong', () => {
    expect((errorOf({ message: 'duplicate key', sqlState: '23505', unavailable: false }, where) as DatabaseError).code).to.equal('DB_CONSTRAINT')
    expect((errorOf({ message: 'no such table', sqlState: '42P01', unavailable: false }, where) as DatabaseError).code).to.equal('DB_SQL')
  })

  it('names a failure by its message, SQLSTATE and statement, each only when known', () => {
    expect(errorOf({ message: 'syntax error', unavailable: false, statement: 'SELEC 1' }, where).message).to.equal('DB_SQL: syntax error: SELEC 1')
    expect(errorOf({ message: 'syntax error', sqlState: '42601', unavailable: false, statement: 'SELEC 1' }, where, 'SELEC  2').message).to.equal('DB_SQL: syntax error (SQLSTATE 42601): SELEC 2')
    expect(errorOf({ message: 'bad', unavailable: false }, where).message).to.equal('DB_SQL: bad')
    expect(unavailableOf({ message: 'connection refused', unavailable: true }, where).message).to.equal(`DB_UNAVAILABLE: the database ${where} is unavailable: connection refused`)
  })
})

/** Statements translated and named once, and the values they are run with, as PostgreSQL takes them. */
describe('PostgreSQL engine: prepared statements and their parameters', () => {
  it('refuses transaction control, and translates and names each other text once', () => {
    const s = new PgStatements()
    const e = (() => {
      try {
        s.get('  COMMIT')
      } catch (err) {
        return err
      }
      return undefined
    })()
    expect(e).to.be.instanceOf(DatabaseError).with.property('code', 'DB_MISUSE')
    expect((e as Error).message).to.equal('DB_MISUSE: transaction control is managed by Database.transaction(): COMMIT')
    const a = s.get('SELECT * FROM t WHERE a = ?')
    expect(s.get('SELECT * FROM t WHERE a = ?')).to.equal(a)
    expect(a).to.deep.include({ kind: 'read', name: 'parley_1', returnsRowid: false })
    expect(s.get('DELETE FROM t')).to.deep.include({ kind: 'write', name: 'parley_2' })
  })

  it('keeps no more than 4096 texts, running the others unnamed (translated on each use)', () => {
    const s = new PgStatements()
    for (let i = 0; i < 4096; i++) s.get(`SELECT ${i}`)
    const past = s.get('SELECT 4096')
    expect(past.name).to.equal('')
    expect(s.get('SELECT 4096')).to.not.equal(past)
    expect(stepOf(past, undefined)).to.deep.equal({ text: 'SELECT 4096', values: [] })
    expect(s.get('SELECT 7').name).to.equal('parley_8')
  })

  it('binds positional and named values, a missing one as null, bytes, text bytes, big integers and IN lists', () => {
    const s = new PgStatements()
    const positional = s.get(`INSERT INTO t VALUES (?, ?, ?, ${TEXT_FROM_BYTES}, ?)`)
    const bytes = new Uint8Array([0x68, 0x69])
    const step = stepOf(positional, [1, bytes, 12345678901234567890n, bytes])
    expect(step.values).to.deep.equal([1, Buffer.from(bytes), '12345678901234567890', 'hi', null])
    expect(step).to.include({ name: positional.name })
    const named = s.get('SELECT * FROM t WHERE a = :a OR b = :b')
    expect(stepOf(named, { ':b': 'x' }).values).to.deep.equal([null, 'x'])
    const list = s.get(`SELECT * FROM t WHERE id ${IN_LIST}`)
    expect(stepOf(list, [inList(['a', 'b'])]).values).to.deep.equal([['a', 'b']])
    expect(() => stepOf(list, [3])).to.throw(DatabaseError, 'parameter 1 is an IN list: bind inList(values)')
  })

  it("returns an INSERT's identity only for a table that has one, and not twice", () => {
    const s = new PgStatements()
    s.identity = new Map([['events', 'seq']])
    const insert = s.get('INSERT INTO events (type) VALUES (?)')
    const withRowid = s.returningRowid(insert)!
    expect(withRowid).to.deep.include({ returnsRowid: true, name: 'parley_2' })
    expect(withRowid.pg.text).to.equal('INSERT INTO events (type) VALUES ($1) RETURNING seq AS parley_rowid')
    expect(s.returningRowid(insert)).to.equal(withRowid)
    expect(s.returningRowid(s.get('INSERT INTO events (type) VALUES (?) RETURNING seq'))).to.equal(undefined)
    expect(s.returningRowid(s.get('INSERT INTO pins (hash) VALUES (?)'))).to.equal(undefined)
    expect(s.returningRowid(s.get('UPDATE events SET type = ?'))).to.equal(undefined)
  })
})
