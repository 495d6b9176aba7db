import { expect } from 'chai'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { batchPayload } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now, timestampSortKey } from '../../../../node/core/time.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import type { Migration } from '../../../../node/db/database.js'
import { migrations } from '../../../../node/db/schema/index.js'
import type { BatchPayload, Data, Header, Message } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { forEachEngine, openTestDatabase, registerOrg, reposOver, type Repos } from '../../../support/repos.js'

const KEY_A = '0x' + 'aa'.repeat(20)
const ORG_A = 'did:firefly:org/orgA'

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
    await registerOrg(repos.db, repos.identities, 'orgA', KEY_A)
    agg.start()
  })
  const aggregator = (): Aggregator => new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [], log: (l) => logs.push(l), onOutcome: () => {} })
  afterEach(async () => {
    await agg.stop()
    await repos.db.close()
    await dirs.cleanup()
  })

  /**
   * A batch of orgA's broadcasts as it travels, one per topic list (`authorOf` each message's author), after the messages
   * (with their data) of `carried` when given: a message an author sends again in another batch.
   */
  function makeBatch(topicLists: string[][], authorOf: (i: number) => string = () => ORG_A, carried: { messages: Message[]; data: Data[] } = { messages: [], data: [] }): { payload: BatchPayload; messages: Message[]; data: Data[] } {
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const data: Data[] = [...carried.data]
    const messages: Message[] = [...carried.messages]
    for (const [i, topics] of topicLists.entries()) {
      const valueRaw = JSON.stringify({ i, topics, at: now() })
      const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw }), created: now(), value: valueRaw }
      data.push(d)
      const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: authorOf(i), key: KEY_A, created: now(), namespace: 'default', topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
      messages.push({ header, hash: messageHash(header), state: 'pending', data: [{ id: d.id, hash: d.hash }] })
    }
    const { hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data })), data })
    const payload = batchPayload({ id, type: 'broadcast', namespace: 'default', author: ORG_A, key: KEY_A, created: now(), hash, manifest: '', txId, state: 'sealed', local: false }, messages, data)
    return { payload, messages, data }
  }

  /** Its pins, as the chain follower stores them (one BatchPin event), then walked: they wait for the batch. */
  async function pin(b: BatchPayload): Promise<void> {
    await repos.db.transaction((tx) => {
      let index = 0
      const eventId = newId()
      for (const m of b.messages) for (const t of m.header.topics) repos.pins.insert(tx, { batchId: b.id, batchHash: b.hash as Hash, index: index++, hash: broadcastContext(t), masked: false, signer: KEY_A, eventId })
    })
    agg.wake()
    await agg.whenIdle()
  }

  async function receive(b: BatchPayload): Promise<void> {
    await agg.receive(b, sealManifest(b).manifest, `Qm${b.id}`)
    await agg.whenIdle()
  }

  const row = (m: Message): Row | undefined => repos.db.get<Row>('SELECT state, tx_id, pin_seq, confirmed_key, reject_reason FROM messages WHERE id = ? AND hash = ?', [m.header.id, m.hash])
  const updated = (): string[] => repos.db.all<{ id: string; state: string }>('SELECT id, state FROM message_updates').map((r) => `${r.id} ${r.state}`)
  const confirmedOrder = (): string[] => repos.events.list({ namespace: 'default', type: 'message_confirmed', limit: 1000, skip: 0, ascending: true }).map((e) => e.reference)
  const firstPinSeq = (b: BatchPayload, index: number): number => repos.pins.deciding(b.id, b.hash, KEY_A).find((p) => p.index === index)!.seq

  it('confirms a batch whose pins were walked as it stores it: each message row is written once, confirmed', async () => {
    const { payload: b, messages } = makeBatch([['t1'], ['t2'], ['t1']])
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
    const { payload: b, messages } = makeBatch([['t1'], ['t1']], (i) => (i === 0 ? 'did:firefly:org/orgX' : ORG_A))
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
    const { payload: late, messages: lateMessages } = makeBatch([['t1']])
    const { payload: early, messages: earlyMessages } = makeBatch([['t1'], ['t2']])
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

  it('stores a batch carrying a message held here already as before, and still confirms both in pin order', async () => {
    const { payload: first, messages: firstMessages, data: firstData } = makeBatch([['t1']])
    // Held pending from its first batch, whose pins never came.
    await receive(first)
    expect(row(firstMessages[0]!)!.state).to.equal('pending')
    const { payload: again, messages } = makeBatch([['t2']], undefined, { messages: firstMessages, data: firstData })
    await pin(again)
    await receive(again)
    expect(confirmedOrder()).to.deep.equal(messages.map((m) => m.header.id))
    expect(row(messages[0]!)!.state).to.equal('confirmed')
    expect(row(messages[1]!)!.state).to.equal('confirmed')
    // The walk that decided them in the abandoned transaction left nothing behind: a new pin on t1 is decided in turn.
    const { payload: next, messages: nextMessages } = makeBatch([['t1']])
    await pin(next)
    await receive(next)
    expect(confirmedOrder().slice(-1)).to.deep.equal([nextMessages[0]!.header.id])
    expect(logs.filter((l) => !/rejected/.test(l))).to.deep.equal([])
  })

  it('stores a batch handed over after its stop without a walk, which the next start makes', async () => {
    const { payload: b, messages } = makeBatch([['t1']])
    await pin(b)
    await agg.stop()
    await agg.receive(b, sealManifest(b).manifest, `Qm${b.id}`)
    expect(row(messages[0]!)!.state).to.equal('pending')
    agg = aggregator()
    agg.start()
    await agg.whenIdle()
    expect(row(messages[0]!)!.state).to.equal('confirmed')
  })
})
