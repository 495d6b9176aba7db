import type { Worker } from 'node:worker_threads'
import { expect } from 'chai'
import pg from 'pg'
import type { BridgeReply, Step } from '../../../../../node/db/pg/bridge-protocol.js'
import { redact, SyncBridge, type BridgeHealth } from '../../../../../node/db/pg/bridge.js'
import { DatabaseError } from '../../../../../node/db/errors.js'
import { testDatabase } from '../../../../support/postgres.js'

/**
 * The bridge's worker keeps its connection's transaction state straight whatever the event loop sends: a COMMIT that
 * PostgreSQL turned into a ROLLBACK is a failure, a request that was to end the transaction ends it even when a step
 * before its COMMIT failed, a BEGIN never nests in a transaction left open, and a worker thread that dies is replaced.
 */
describe('PostgreSQL bridge: transaction state on the worker, and a worker that dies', () => {
  let url: string
  let drop: () => Promise<void>
  let bridge: SyncBridge
  const health: BridgeHealth[] = []

  before(async () => {
    const d = await testDatabase({ empty: true })
    url = d.url
    drop = d.drop
    bridge = await SyncBridge.start(url, (h) => health.push(h))
  })
  after(async () => {
    await bridge?.close()
    await drop?.()
  })

  const ok = (steps: Step[]): Extract<BridgeReply, { ok: true }> => {
    const r = bridge.call(steps)
    if (!r.ok) throw new Error(`expected success: ${r.failure.message}`)
    return r
  }
  const failed = (r: BridgeReply): Extract<BridgeReply, { ok: false }>['failure'] => {
    if (r.ok) throw new Error('expected a failure')
    return r.failure
  }
  const txid = (): number => ok([{ text: 'SELECT txid_current() AS x' }]).rows[0]!['x'] as number
  const backend = (): number => ok([{ text: 'SELECT pg_backend_pid() AS p' }]).rows[0]!['p'] as number
  async function until(what: string, cond: () => boolean): Promise<void> {
    const end = Date.now() + 20_000
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  it('answers a COMMIT of a failed transaction (which PostgreSQL turns into ROLLBACK) as a failure', async () => {
    ok([{ text: 'BEGIN' }])
    expect(failed(bridge.call([{ text: 'SELECT 1/0' }])).sqlState).to.equal('22012')
    const f = failed(await bridge.send([{ text: 'COMMIT' }]))
    expect(f).to.include({ sqlState: '25P02', unavailable: false })
    expect(ok([{ text: 'SELECT 1 AS one' }]).rows).to.deep.equal([{ one: 1 }])
  })

  it('ends the transaction of a request that was to end it, when a step before its COMMIT fails', async () => {
    ok([{ text: 'BEGIN' }])
    expect(failed(await bridge.send([{ text: 'RELEASE no_such_savepoint' }, { text: 'COMMIT' }])).sqlState).to.equal('3B001')
    // Outside any transaction again: the next statement runs rather than failing as "current transaction is aborted".
    expect(ok([{ text: 'SELECT 1 AS one' }]).rows).to.deep.equal([{ one: 1 }])
  })

  it('rolls back a transaction left open before a BEGIN, rather than nesting in it', () => {
    ok([{ text: 'BEGIN' }])
    const first = txid()
    ok([{ text: 'BEGIN' }])
    expect(txid()).to.not.equal(first)
    ok([{ text: 'ROLLBACK' }])
  })

  it('refuses the rest of a transaction whose connection was lost, ROLLBACK TO included, as unavailable', async () => {
    ok([{ text: 'BEGIN' }, { text: 'SAVEPOINT parley_read' }])
    const pid = backend()
    const seen = health.length
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query('SELECT pg_terminate_backend($1)', [pid])
    await admin.end()
    // Whether pg saw the connection go before or with this statement: unavailable either way.
    expect(failed(bridge.call([{ text: 'SELECT 1' }])).unavailable).to.equal(true)
    // The loss reaches this thread as a message: `status.up` is stale until then, so wait for the loss, then the return.
    await until('it has reconnected', () => health.slice(seen).some((h) => !h.up) && bridge.status.up)
    const f = failed(bridge.call([{ text: 'ROLLBACK TO parley_read; RELEASE parley_read' }]))
    expect(f.unavailable).to.equal(true)
    expect(f.message).to.match(/lost inside this transaction/)
    ok([{ text: 'ROLLBACK' }])
  })

  it("keeps the connection when pg itself refuses a request (no SQLSTATE): it is the request's fault, not the server's", () => {
    const pid = backend()
    ok([{ text: 'SELECT 1 AS a', values: [], name: 'parley_twice' }])
    const f = failed(bridge.call([{ text: 'SELECT 2 AS a', values: [], name: 'parley_twice' }]))
    expect(f).to.include({ unavailable: false })
    expect(f.sqlState).to.equal(undefined)
    expect(bridge.status.up).to.equal(true)
    expect(backend()).to.equal(pid)
  })

  it('replaces a worker thread that died: down, then up again on a new connection, without a new start', async () => {
    const pid = backend()
    const seen = health.length
    // As a crash of the thread would: it is gone without a word.
    await (bridge as unknown as { thread: { worker: Worker } }).thread.worker.terminate()
    await until('it is back', () => health.length >= seen + 2 && bridge.status.up)
    expect(health.slice(seen).map((h) => h.up)).to.deep.equal([false, true])
    expect(health[seen]!.detail).to.match(/worker thread exited/)
    expect(backend()).to.not.equal(pid)
  })
})

/** A bridge once closed refuses at once, and the URL it names never shows a password. */
describe('PostgreSQL bridge: closed, and the database it names', () => {
  it('refuses calls and sends once closed, as unavailable, naming the database without its password', async () => {
    const d = await testDatabase({ empty: true })
    try {
      const bridge = await SyncBridge.start(d.url, () => {})
      await bridge.close()
      const closed = `DB_UNAVAILABLE: the database ${redact(d.url)} is unavailable: the database is closed`
      expect(() => bridge.call([{ text: 'SELECT 1' }])).to.throw(DatabaseError, closed)
      expect(await bridge.send([{ text: 'SELECT 1' }]).then(() => 'sent', (e: Error) => e.message)).to.equal(closed)
      expect(closed).to.not.contain(new URL(d.url).password || 'no password')
    } finally {
      await d.drop()
    }
  })

  it('masks a password, keeps a URL without one, and names no part of a URL it cannot parse', () => {
    expect(redact('postgres://member:s3cret@db.example:5432/org1')).to.equal('postgres://member:***@db.example:5432/org1')
    expect(redact('postgres://db.example/org1')).to.equal('postgres://db.example/org1')
    expect(redact('postgres://member:s3cret@db example/org1')).to.equal('(an unparsable URL)')
    // pg reads a password from the query string as well, and a URL without its scheme still holds one before its @.
    expect(redact('postgres://member@db.example/org1?sslmode=require&password=s3cret')).to.equal('postgres://member@db.example/org1?sslmode=require&password=***')
    expect(redact('member:s3cret@db.example/org1')).to.equal('(an unparsable URL)')
    expect(redact('postgres:///org1?host=/var/run/postgresql')).to.equal('postgres:///org1?host=/var/run/postgresql')
    // The rest of a query kept as written beside a password; an '@' past what parses as a port: part of a password.
    expect(redact('postgres:///org1?host=/var/run/postgresql&password=s3cret')).to.equal('postgres:///org1?host=/var/run/postgresql&password=***')
    expect(redact('postgres://member:12/s3cret@db.example/org1')).to.equal('(an unparsable URL)')
  })
})
