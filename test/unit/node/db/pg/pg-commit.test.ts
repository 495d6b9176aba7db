import { expect } from 'chai'
import { committed } from '../../../../../node/db/pg/pg-commit.js'
import type { PgTick } from '../../../../../node/db/pg/pg-tick.js'

const where = 'postgres://parley:***@db.example:5432/member'

/** How a turn's functions settle on its COMMIT's reply: each by its group's outcome, or all by the COMMIT's failure. */
describe('PostgreSQL engine: settling a turn on its COMMIT', () => {
  /** A turn of functions in `groups` (undefined: no group of its own), and how each settled. */
  function turn(groups: (number | undefined)[]): { tick: PgTick; settled: string[] } {
    const settled: string[] = groups.map(() => 'waiting')
    const members = groups.map((group, i) => ({ resolve: () => void (settled[i] = 'resolved'), reject: (e: Error) => void (settled[i] = e.message), ...(group === undefined ? {} : { group }) }))
    return { tick: { members, sent: true, savepointPending: false, wrote: true }, settled }
  }

  it('resolves every function but those whose group of writes failed, which reject with their own error', () => {
    const { tick, settled } = turn([undefined, 1, 2])
    const durable = committed(tick, { id: 1, ok: true, rows: [], rowCount: 0, groupFailures: [{ group: 2, failure: { message: 'duplicate key', sqlState: '23505', unavailable: false, statement: 'INSERT INTO t VALUES ($1)' } }] }, where)
    expect(durable).to.equal(true)
    expect(settled).to.deep.equal(['resolved', 'resolved', 'DB_CONSTRAINT: duplicate key (SQLSTATE 23505): INSERT INTO t VALUES ($1)'])
  })

  it('rejects every function, never saying durable, when the COMMIT failed or its outcome is unknown', () => {
    const lost = turn([undefined, 1])
    expect(committed(lost.tick, { id: 1, ok: false, failure: { message: 'Connection terminated', unavailable: true } }, where)).to.equal(false)
    expect(lost.settled).to.deep.equal(Array(2).fill(`DB_UNAVAILABLE: the database ${where} went away during COMMIT; whether it committed is unknown: Connection terminated`))
    const refused = turn([undefined])
    expect(committed(refused.tick, { id: 1, ok: false, failure: { message: 'could not serialize access', sqlState: '40001', unavailable: false } }, where)).to.equal(false)
    expect(refused.settled).to.deep.equal(['DB_SQL: could not serialize access (SQLSTATE 40001): COMMIT'])
  })
})
