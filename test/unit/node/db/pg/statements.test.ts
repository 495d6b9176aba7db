import { expect } from 'chai'
import { isParleyError } from '../../../../../node/core/errors.js'
import { DatabaseError } from '../../../../../node/db/errors.js'
import { isConnectionLoss } from '../../../../../node/db/pg/bridge-protocol.js'
import { errorOf } from '../../../../../node/db/pg/statements.js'

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
})
