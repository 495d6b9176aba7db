import { expect } from 'chai'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { timestampSortKey, now } from '../../../../node/core/time.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import type { Migration } from '../../../../node/db/database.js'
import { migrations } from '../../../../node/db/schema/index.js'
import type { DefinitionHandler } from '../../../../node/definitions/types.js'
import type { BatchPayload, Message } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { forEachEngine, openTestDatabase, registerOrg, reposOver, type Repos } from '../../../support/repos.js'
import { handedOver, makeReceivedBatch, pinReceivedBatch, SENDER_KEY, SENDER_ORG } from '../../../support/received-batch.js'

const NOTE = 'test-note'

/** Test-only: every UPDATE of a message row noted, so that a test sees whether a row was written once. */
const noteUpdates: Migration = {
  version: migrations[migrations.length - 1]!.version + 1,
  name: 'test: note message updates',
  up: `
    CREATE TABLE message_updates (id TEXT NOT NULL, state TEXT NOT NULL);
    CREATE TRIGGER messages_updated AFTER UPDATE ON messages BEGIN INSERT INTO message_updates (id, state) VALUES (NEW.id, NEW.state); END;
  `,
}

interface Row {
  state: string
  tx_id: string | null
  pin_seq: number | null
  confirmed_key: string | null
  reject_reason: string | null
  [column: string]: string | number | null
}

/** Aggregator.receive: a received batch stored and walked in one transaction, its message rows written once. */
forEachEngine('aggregator: receiving a batch', (engine) => {
  const dirs = new TempDirs()
  let repos: Repos
  let agg: Aggregator
  let logs: string[]

  beforeEach(async () => {
    repos = reposOver(await openTestDatabase(await dirs.make(), [...migrations, noteUpdates], engine))
    logs = []
    agg = aggregator()
    await registerOrg(repos.db, repos.identities, 'orgA', SENDER_KEY)
    agg.start()
  })
  const aggregator = (): Aggregator => new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [noteHandler], log: (l) => logs.push(l), onOutcome: () => {} })
  /** A definition whose handler reads its own message's row, as the identity and datatype handlers read the database. */
  const noteHandler: DefinitionHandler = {
    tag: NOTE,
    handle: (tx, message) => {
      const r = tx.get<{ state: string }>('SELECT state FROM messages WHERE id = ? AND hash = ?', [message.header.id, message.hash])
      return r?.state === 'pending' ? { kind: 'confirm', events: [] } : { kind: 'reject', reason: `its row is ${r?.state ?? 'missing'}` }
    },
  }
  afterEach(async () => {
    await agg.stop()
    await repos.db.close()
    await dirs.cleanup()
  })

  /** Its pins, as the chain follower stores them (one BatchPin event), then walked: they wait for the batch. */
  async function pin(b: BatchPayload): Promise<void> {
    await pinReceivedBatch(repos, b)
    agg.wake()
    await agg.whenIdle()
  }

  async function receive(b: BatchPayload): Promise<void> {
    await agg.receive(...handedOver(b))
    await agg.whenIdle()
  }

  const row = (m: Message): Row | undefined => repos.db.get<Row>('SELECT state, tx_id, pin_seq, confirmed_key, reject_reason FROM messages WHERE id = ? AND hash = ?', [m.header.id, m.hash])
  const updated = (): string[] => repos.db.all<{ id: string; state: string }>('SELECT id, state FROM message_updates').map((r) => `${r.id} ${r.state}`)
  const confirmedOrder = (): string[] => repos.events.list({ namespace: 'default', type: 'message_confirmed', limit: 1000, skip: 0, ascending: true }).map((e) => e.reference)
  const firstPinSeq = (b: BatchPayload, index: number): number => repos.pins.deciding(b.id, b.hash, SENDER_KEY).find((p) => p.index === index)!.seq

  it('confirms a batch whose pins were walked as it stores it: each message row is written once, confirmed', async () => {
    const { payload: b, messages } = makeReceivedBatch([['t1'], ['t2'], ['t1']])
    await pin(b)
    expect(row(messages[0]!)).to.equal(undefined)
    await receive(b)
    expect(confirmedOrder()).to.deep.equal(messages.map((m) => m.header.id))
    expect(updated(), 'no row updated after its insert').to.deep.equal([])
    for (const [i, m] of messages.entries()) {
      const r = row(m)!
      // What the confirmation's UPDATE writes (MessagesRepo.confirmMany), there from the insert.
      expect(r.state).to.equal('confirmed')
      expect(r.tx_id).to.equal(b.tx.id)
      expect(r.pin_seq).to.equal(firstPinSeq(b, i))
      expect(r.confirmed_key).to.be.a('string')
    }
    const received = repos.batches.get(b.id)?.received
    expect(received).to.be.a('string')
    // Decided after it arrived, as a trace orders the two.
    for (const m of messages) expect(timestampSortKey(repos.messages.get(m.header.id)!.confirmed!) > timestampSortKey(received!), 'confirmed after received').to.equal(true)
  })

  it('rejects as it stores: the row is written once, rejected with its reason and deciding pin', async () => {
    const { payload: b, messages } = makeReceivedBatch([['t1'], ['t1']], { authorOf: (i) => (i === 0 ? 'did:firefly:org/orgX' : SENDER_ORG) })
    await pin(b)
    await receive(b)
    const r = row(messages[0]!)!
    expect(r.state).to.equal('rejected')
    expect(r.reject_reason).to.match(/does not own key/)
    expect(r.pin_seq).to.equal(firstPinSeq(b, 0))
    expect(row(messages[1]!)!.state).to.equal('confirmed')
    expect(updated()).to.deep.equal([])
  })

  it('keeps the chain order: a batch that arrives before an earlier pin’s batch waits, written pending, and follows it', async () => {
    const { payload: late, messages: lateMessages } = makeReceivedBatch([['t1']])
    const { payload: early, messages: earlyMessages } = makeReceivedBatch([['t1'], ['t2']])
    await pin(late)
    await pin(early)
    await receive(early)
    // t2 is behind nothing; t1 waits for the late batch's message.
    expect(confirmedOrder()).to.deep.equal([earlyMessages[1]!.header.id])
    expect(row(earlyMessages[0]!)!.state).to.equal('pending')
    await receive(late)
    expect(confirmedOrder()).to.deep.equal([earlyMessages[1]!.header.id, lateMessages[0]!.header.id, earlyMessages[0]!.header.id])
    // Only the message that had to wait was updated; the late batch's was written confirmed.
    expect(updated()).to.deep.equal([`${earlyMessages[0]!.header.id} confirmed`])
  })

  it('abandons a walk that decided a message held here already, and stores and walks the batch as before', async () => {
    const { payload: first, messages: firstMessages, data: firstData } = makeReceivedBatch([['t1']])
    // Held pending from its first batch, whose pins never came.
    await receive(first)
    expect(row(firstMessages[0]!)!.state).to.equal('pending')
    // Sent again with the same data item made at another time: a data row new here, so only the message row is held,
    // and the walk in the storing transaction decides it before its row's insert finds it held.
    const carried = { messages: firstMessages, data: [{ ...firstData[0]!, created: now() }] }
    const { payload: again, messages } = makeReceivedBatch([['t2'], ['t3']], { carried, authorOf: (i) => (i === 1 ? 'did:firefly:org/orgX' : SENDER_ORG) })
    await pin(again)
    await receive(again)
    expect(confirmedOrder()).to.deep.equal([messages[0]!.header.id, messages[1]!.header.id])
    expect(row(messages[0]!)!.state, 'the held row, confirmed by this batch').to.equal('confirmed')
    expect(row(messages[1]!)!.state).to.equal('confirmed')
    expect(row(messages[2]!)!.state).to.equal('rejected')
    expect(repos.events.list({ namespace: 'default', type: 'message_rejected', limit: 10, skip: 0, ascending: true }).map((e) => e.reference)).to.deep.equal([messages[2]!.header.id])
    // Logged once, by the walk that committed: not by the abandoned one.
    expect(logs.filter((l) => /rejected/.test(l))).to.have.length(1)
    // The walk that decided them in the abandoned transaction left nothing behind: a new pin on t1 is decided in turn.
    const { payload: next, messages: nextMessages } = makeReceivedBatch([['t1']])
    await pin(next)
    await receive(next)
    expect(confirmedOrder().slice(-1)).to.deep.equal([nextMessages[0]!.header.id])
    expect(logs.filter((l) => !/rejected/.test(l))).to.deep.equal([])
  })

  it('stores a batch of definitions first, then walks it: a handler sees its message row', async () => {
    const { payload: b, messages } = makeReceivedBatch([['defs']], { header: { type: 'definition', tag: NOTE } })
    await pin(b)
    await receive(b)
    expect(row(messages[0]!)).to.include({ state: 'confirmed', reject_reason: null })
  })

  it('stores the batches handed over but not stored at its stop, unwalked', async () => {
    const { payload: one, messages: oneMessages } = makeReceivedBatch([['t1']])
    const { payload: two, messages: twoMessages } = makeReceivedBatch([['t2']])
    await pin(one)
    await pin(two)
    // The first is taken at once by the walk's loop; the second waits behind it, and the stop comes first.
    const stored = [agg.receive(...handedOver(one)), agg.receive(...handedOver(two))]
    await agg.stop()
    await Promise.all(stored)
    expect(row(oneMessages[0]!)!.state).to.equal('confirmed')
    expect(row(twoMessages[0]!)!.state).to.equal('pending')
  })

  it('stores a batch handed over after its stop without a walk, which the next start makes', async () => {
    const { payload: b, messages } = makeReceivedBatch([['t1']])
    await pin(b)
    await agg.stop()
    await agg.receive(...handedOver(b))
    expect(row(messages[0]!)!.state).to.equal('pending')
    agg = aggregator()
    agg.start()
    await agg.whenIdle()
    expect(row(messages[0]!)!.state).to.equal('confirmed')
  })
})
