import { expect } from 'chai'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { DatabaseError } from '../../../../node/db/errors.js'
import { migrations } from '../../../../node/db/schema/index.js'
import type { DefinitionHandler } from '../../../../node/definitions/types.js'
import type { BatchPayload, Message } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { forEachEngine, openTestDatabase, registerOrg, reposOver, type Repos } from '../../../support/repos.js'
import { handedOver, makeReceivedBatch, pinReceivedBatch, SENDER_KEY } from '../../../support/received-batch.js'

const FAULTY = 'test-faulty'

/** Aggregator.receive when the transaction that stores and walks a batch fails: the batch is stored, the walk recovers. */
forEachEngine('aggregator: receiving a batch when its walk fails', (engine) => {
  const dirs = new TempDirs()
  let repos: Repos
  let agg: Aggregator
  let logs: string[]
  /** While set, the handler of FAULTY definitions throws (a handler's bug). */
  let handlerBroken: boolean

  beforeEach(async () => {
    repos = reposOver(await openTestDatabase(await dirs.make(), migrations, engine))
    logs = []
    handlerBroken = false
    const faulty: DefinitionHandler = {
      tag: FAULTY,
      handle: () => {
        if (handlerBroken) throw new Error('a handler bug')
        return { kind: 'confirm', events: [] }
      },
    }
    agg = new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [faulty], log: (l) => logs.push(l), onOutcome: () => {} })
    await registerOrg(repos.db, repos.identities, 'orgA', SENDER_KEY)
    agg.start()
  })
  afterEach(async () => {
    await agg.stop()
    await repos.db.close()
    await dirs.cleanup()
  })

  const state = (m: Message): string | undefined => repos.db.get<{ state: string }>('SELECT state FROM messages WHERE id = ? AND hash = ?', [m.header.id, m.hash])?.state
  const confirmedOrder = (): string[] => repos.events.list({ namespace: 'default', type: 'message_confirmed', limit: 100, skip: 0, ascending: true }).map((e) => e.reference)
  /** What a batch fetcher's store came to, once the walk's loop is idle. */
  async function handOver(b: BatchPayload): Promise<'resolved' | 'rejected' | 'unsettled'> {
    let settled: 'resolved' | 'rejected' | 'unsettled' = 'unsettled'
    void agg.receive(...handedOver(b)).then(
      () => (settled = 'resolved'),
      () => (settled = 'rejected'),
    )
    await agg.whenIdle()
    await new Promise((r) => setImmediate(r))
    return settled
  }

  /**
   * The connection to PostgreSQL lost while the batch's transaction runs: the engine fails every statement of that
   * event-loop turn. sql.js has no connection to lose; there the turn's other statements are failed as PostgreSQL fails
   * them (transactions, and the read of the waiting pins that rebuilds the queues).
   */
  function loseConnectionAtNextMessageInsert(): void {
    const lost = new DatabaseError('DB_UNAVAILABLE', 'the database is unavailable: connection lost')
    const { messages, pins, db } = repos
    const insertDecided = messages.insertDecided.bind(messages)
    messages.insertDecided = (tx, rows) => {
      messages.insertDecided = insertDecided
      if (engine === 'sqljs') breakTurn()
      throw lost
    }
    function breakTurn(): void {
      const transaction = db.transaction.bind(db)
      const waitingBroadcast = pins.waitingBroadcast.bind(pins)
      db.transaction = () => Promise.reject(lost)
      pins.waitingBroadcast = () => {
        throw lost
      }
      setImmediate(() => {
        db.transaction = transaction
        pins.waitingBroadcast = waitingBroadcast
      })
    }
  }

  it('settles a batch whose store fails with the connection, and keeps a later batch on its topic behind it', async () => {
    const { payload: a, messages: aMessages } = makeReceivedBatch([['t1']])
    const { payload: b, messages: bMessages } = makeReceivedBatch([['t1']])
    await pinReceivedBatch(repos, a)
    await pinReceivedBatch(repos, b)
    agg.wake()
    await agg.whenIdle()
    loseConnectionAtNextMessageInsert()
    // Rejected, so that the fetcher tries again: nothing of it is stored.
    expect(await handOver(a)).to.equal('rejected')
    expect(state(aMessages[0]!)).to.equal(undefined)
    await repos.db.whenWritable()
    // The walk that decided `a` in the failed transaction took its pin off the queues: read again, they hold it.
    expect(await handOver(b)).to.equal('resolved')
    expect(state(bMessages[0]!), 'behind the pin of a batch not here').to.equal('pending')
    expect(confirmedOrder()).to.deep.equal([])
    expect(await handOver(a)).to.equal('resolved')
    expect(confirmedOrder()).to.deep.equal([aMessages[0]!.header.id, bMessages[0]!.header.id])
  })

  it('stores a batch whose walk fails on another batch’s message, pending, and walks it once that passes', async () => {
    handlerBroken = true
    const { payload: definition, messages: definitionMessages } = makeReceivedBatch([['defs']], { header: { type: 'definition', tag: FAULTY } })
    const { payload: broadcast, messages } = makeReceivedBatch([['t1']])
    await pinReceivedBatch(repos, definition)
    await pinReceivedBatch(repos, broadcast)
    expect(await handOver(definition)).to.equal('resolved')
    expect(logs.filter((l) => /pass failed/.test(l))).to.have.length(1)
    // Its walk would decide the definition first, and fails: the batch is stored all the same.
    expect(await handOver(broadcast)).to.equal('resolved')
    expect(state(messages[0]!)).to.equal('pending')
    handlerBroken = false
    agg.wake()
    await agg.whenIdle()
    expect(confirmedOrder()).to.deep.equal([definitionMessages[0]!.header.id, messages[0]!.header.id])
  })

  it('stores a batch handed over while a pass fails before the loop rests, without waiting for the retry', async () => {
    handlerBroken = true
    const { payload: definition } = makeReceivedBatch([['defs']], { header: { type: 'definition', tag: FAULTY } })
    const { payload: broadcast, messages } = makeReceivedBatch([['t1']])
    await pinReceivedBatch(repos, definition)
    await pinReceivedBatch(repos, broadcast)
    expect(await handOver(definition)).to.equal('resolved')
    // A walk starts (its pass fails) and the batch is handed over while it runs.
    agg.wake()
    let settled = false
    void agg.receive(...handedOver(broadcast)).then(() => (settled = true))
    await agg.whenIdle()
    await new Promise((r) => setImmediate(r))
    expect(settled).to.equal(true)
    expect(state(messages[0]!)).to.equal('pending')
  })

  it('walks the waiting pins again at its next walk when the read after a committed change fails', async () => {
    const { payload: a } = makeReceivedBatch([['t1']])
    const { payload: b, messages: bMessages } = makeReceivedBatch([['t1']])
    await pinReceivedBatch(repos, a)
    await pinReceivedBatch(repos, b)
    agg.wake()
    await agg.whenIdle()
    expect(await handOver(b)).to.equal('resolved')
    expect(state(bMessages[0]!), 'behind the pin of a batch not here').to.equal('pending')
    // a's pin event refused: its pins freed (committed), then the read of where the held waiting pins start fails.
    const { event_id: eventId } = repos.db.get<{ event_id: string }>('SELECT event_id FROM pins WHERE batch_id = ?', [a.id])!
    const minHeldWaitingSeq = repos.pins.minHeldWaitingSeq.bind(repos.pins)
    repos.pins.minHeldWaitingSeq = () => {
      repos.pins.minHeldWaitingSeq = minHeldWaitingSeq
      throw new DatabaseError('DB_UNAVAILABLE', 'the database is unavailable: connection lost')
    }
    agg.pinEventRefused({ batchId: a.id, batchHash: a.hash, signer: SENDER_KEY, eventId })
    await agg.whenIdle()
    expect(state(bMessages[0]!)).to.equal('pending')
    // The next walk (the retry's, or any other) owes that rewind: b, no longer behind anything, is decided.
    agg.wake()
    await agg.whenIdle()
    expect(state(bMessages[0]!)).to.equal('confirmed')
  })
})
