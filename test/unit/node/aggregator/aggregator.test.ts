import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from '../../../../node/db/database.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, identityTopic, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { type Data, type Header, type Message } from '../../../../node/model/index.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'

const KEY_A = '0x' + 'aa'.repeat(20)
const KEY_B = '0x' + 'bb'.repeat(20)

/** The aggregator over a real (temporary) database: pins in, confirmations out, in chain order per topic. */
describe('aggregator', () => {
  let dir: string
  let db: Database
  let repos: Repos
  /** Datatypes the validator knows, as `name/version`, with the pin sequence of their definition; every value conforms. */
  let datatypes: Map<string, number>
  let agg: Aggregator
  let logs: string[]

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-agg-'))
    repos = await openRepos(dir)
    db = repos.db
    logs = []
    datatypes = new Map()
    const lookup = (_ns: string, name: string, version: string) => {
      const orderedAt = datatypes.get(`${name}/${version}`)
      return orderedAt === undefined ? undefined : { check: () => undefined, orderedAt }
    }
    agg = new Aggregator({ ...repos, validator: new DataValidatorImpl(lookup), definitions: [], log: (l) => logs.push(l), onOutcome: () => {} })
    await registerOrg(db, repos.identities, 'orgA', KEY_A)
  })
  afterEach(async () => {
    await agg.whenIdle()
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** A received batch of messages (one per topic list), stored as the fetcher would store it. */
  function makeBatch(
    author: string,
    key: string,
    topicLists: string[][],
    dataOf: (i: number) => Pick<Data, 'blob' | 'datatype'> = () => ({}),
    headerOf: (i: number) => Partial<Pick<Header, 'type' | 'tag' | 'cid'>> = () => ({}),
  ): { id: BatchId; hash: string; messages: Message[]; data: Data[]; txId: TxId } {
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const data: Data[] = []
    const messages = topicLists.map((topics, i) => {
      const valueRaw = JSON.stringify({ i, topics })
      const extra = dataOf(i)
      const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw, ...(extra.blob ? { blobHash: extra.blob.hash } : {}) }), created: now(), value: valueRaw, ...extra }
      data.push(d)
      const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author, key, created: now(), namespace: 'default', topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]), ...headerOf(i) }
      return { header, hash: messageHash(header), state: 'pending' as const, data: [{ id: d.id, hash: d.hash }] }
    })
    const { hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data })), data })
    return { id, hash, messages, data, txId }
  }

  async function store(b: ReturnType<typeof makeBatch>): Promise<void> {
    const { manifest } = sealManifest({ id: b.id, tx: { type: 'batch_pin', id: b.txId }, messages: b.messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data })), data: b.data })
    await db.transaction((tx) => {
      repos.batches.insert(tx, { id: b.id, type: 'broadcast', namespace: 'default', author: b.messages[0]!.header.author, key: b.messages[0]!.header.key, created: now(), hash: b.hash as never, manifest, txId: b.txId, state: 'received', local: false })
      for (const d of b.data) repos.data.insert(tx, d, false)
      for (const m of b.messages) repos.messages.insert(tx, m, false)
    })
  }

  async function pin(b: ReturnType<typeof makeBatch>, signer: string): Promise<void> {
    await db.transaction((tx) => {
      let index = 0
      for (const m of b.messages) for (const t of m.header.topics) repos.pins.insert(tx, { batchId: b.id, batchHash: b.hash as never, index: index++, hash: broadcastContext(t), masked: false, signer, eventId: newId() })
    })
  }

  /** Batches that have arrived (stored), then their pins in the order given, each with its own signer. */
  async function arrive(...pinned: [ReturnType<typeof makeBatch>, string][]): Promise<void> {
    for (const [b] of pinned) await store(b)
    for (const [b, signer] of pinned) await pin(b, signer)
  }

  async function settle(): Promise<void> {
    agg.wake()
    await agg.whenIdle()
  }

  const confirmedOrder = () => repos.events.list({ namespace: 'default', type: 'message_confirmed', limit: 1000, skip: 0, ascending: true }).map((e) => e.reference)

  it('confirms in pin order, across batches and members', async () => {
    const b1 = makeBatch('did:firefly:org/orgA', KEY_A, [['t1'], ['t2'], ['t1']])
    const b2 = makeBatch('did:firefly:org/orgA', KEY_A, [['t1'], ['t1', 't2']])
    await arrive([b1, KEY_A], [b2, KEY_A])
    agg.start()
    await agg.whenIdle()
    expect(confirmedOrder()).to.deep.equal([...b1.messages, ...b2.messages].map((m) => m.header.id))
  })

  it('holds a topic behind a batch that has not arrived, lets other topics go, and catches up on arrival in order', async () => {
    const late = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
    const after = makeBatch('did:firefly:org/orgA', KEY_A, [['t1'], ['t3']])
    const other = makeBatch('did:firefly:org/orgA', KEY_A, [['t2']])
    await store(after)
    await store(other)
    await pin(late, KEY_A)
    await pin(after, KEY_A)
    await pin(other, KEY_A)
    agg.start()
    await agg.whenIdle()
    // t1 waits for the late batch; t3 and t2 are not behind it.
    expect(confirmedOrder()).to.deep.equal([after.messages[1]!.header.id, other.messages[0]!.header.id])
    await store(late)
    agg.batchArrived(late.id)
    await agg.whenIdle()
    expect(confirmedOrder().slice(2)).to.deep.equal([late.messages[0]!.header.id, after.messages[0]!.header.id])
  })

  it('holds a message with two topics while either topic is held', async () => {
    const late = makeBatch('did:firefly:org/orgA', KEY_A, [['t2']])
    const both = makeBatch('did:firefly:org/orgA', KEY_A, [['t1', 't2']])
    await store(both)
    await pin(late, KEY_A)
    await pin(both, KEY_A)
    agg.start()
    await agg.whenIdle()
    expect(confirmedOrder()).to.deep.equal([])
    await store(late)
    agg.batchArrived(late.id)
    await agg.whenIdle()
    expect(confirmedOrder()).to.deep.equal([late.messages[0]!.header.id, both.messages[0]!.header.id])
  })

  it('lets a pin another key signed decide nothing of a batch: it neither rejects its message nor blocks its topic', async () => {
    await registerOrg(db, repos.identities, 'orgB', KEY_B)
    const squatted = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
    const next = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
    await arrive([squatted, KEY_B], [next, KEY_A])
    agg.start()
    await agg.whenIdle()
    expect(repos.messages.get(squatted.messages[0]!.header.id)!.state, 'its own key has not pinned it').to.equal('pending')
    expect(confirmedOrder()).to.deep.equal([next.messages[0]!.header.id])
    expect(repos.events.list({ namespace: 'default', type: 'message_rejected', limit: 10, skip: 0 })).to.deep.equal([])
    // Its own key's pin, later in the chain, decides it.
    await pin(squatted, KEY_A)
    await settle()
    expect(confirmedOrder()).to.deep.equal([next.messages[0]!.header.id, squatted.messages[0]!.header.id])
    expect(repos.pins.undispatchedAfter(0, 100), 'the squatter\'s pin is used too').to.deep.equal([])
  })

  it('writes message_confirmed or message_rejected, with its batch tx, first topic and cid, for broadcasts and definitions alike', async () => {
    await registerOrg(db, repos.identities, 'orgB', KEY_B)
    agg = new Aggregator({
      ...repos,
      validator: new DataValidatorImpl(() => undefined),
      definitions: [{ tag: 'test_def', handle: () => ({ kind: 'confirm', events: [] }) }],
      log: (l) => logs.push(l),
      onOutcome: () => {},
    })
    const cid = newId<MessageId>()
    const kinds = [{}, { cid }, { type: 'definition', tag: 'test_def' }, { type: 'definition', tag: 'no_such_handler' }] as const
    const good = makeBatch('did:firefly:org/orgA', KEY_A, [['a', 'b'], ['c'], ['d'], ['e']], () => ({}), (i) => kinds[i]!)
    const forged = makeBatch('did:firefly:org/orgA', KEY_B, [['f']])
    await arrive([good, KEY_A], [forged, KEY_B])
    agg.start()
    await agg.whenIdle()
    const events = repos.events.list({ namespace: 'default', limit: 10, skip: 0, ascending: true })
    const [m0, m1, def, unknown] = good.messages.map((m) => m.header.id)
    expect(events.map((e) => [e.type, e.reference, e.tx, e.topic, e.correlator])).to.deep.equal([
      ['message_confirmed', m0, good.txId, 'a', undefined],
      ['message_confirmed', m1, good.txId, 'c', cid],
      ['message_confirmed', def, good.txId, 'd', undefined],
      ['message_rejected', unknown, good.txId, 'e', undefined],
      ['message_rejected', forged.messages[0]!.header.id, forged.txId, 'f', undefined],
    ])
  })

  it('rejects an author that does not own the signing key', async () => {
    await registerOrg(db, repos.identities, 'orgB', KEY_B)
    const impostor = makeBatch('did:firefly:org/orgA', KEY_B, [['t1']])
    await store(impostor)
    await pin(impostor, KEY_B)
    agg.start()
    await agg.whenIdle()
    expect(repos.messages.get(impostor.messages[0]!.header.id)!.rejectReason).to.contain('does not own key')
  })

  it('waits for an unknown signer whose claim was ordered earlier, then confirms', async () => {
    // The org's claim, on its DID's topic, is pinned first but its batch has not arrived.
    const claim = makeBatch('did:firefly:org/orgC', '0x' + 'cc'.repeat(20), [[identityTopic('did:firefly:org/orgC')]])
    await pin(claim, '0x' + 'cc'.repeat(20))
    const early = makeBatch('did:firefly:org/orgC', '0x' + 'cc'.repeat(20), [['t1']])
    await store(early)
    await pin(early, '0x' + 'cc'.repeat(20))
    agg.start()
    await agg.whenIdle()
    expect(confirmedOrder()).to.deep.equal([])
    await registerOrg(db, repos.identities, 'orgC', '0x' + 'cc'.repeat(20))
    await db.transaction((tx) => repos.pins.markDispatched(tx, claim.id, 0, 0))
    agg.recheckWaiting()
    await agg.whenIdle()
    expect(confirmedOrder()).to.deep.equal([early.messages[0]!.header.id])
  })

  it('rejects a message signed by a key nobody registered when no claim for its author was ordered before it', async () => {
    const stranger = makeBatch('did:firefly:org/orgZ', '0x' + 'dd'.repeat(20), [['t1']])
    const next = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
    await arrive([stranger, '0x' + 'dd'.repeat(20)], [next, KEY_A])
    await settle()
    expect(repos.messages.get(stranger.messages[0]!.header.id)!.rejectReason).to.contain('no registered identity')
    expect(confirmedOrder(), 'the stranger does not hold the topic').to.deep.equal([next.messages[0]!.header.id])
  })

  it('orders a re-pinned batch once (the first pin wins)', async () => {
    const b = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
    await store(b)
    await pin(b, KEY_A)
    await pin(b, KEY_A)
    await settle()
    expect(confirmedOrder()).to.deep.equal([b.messages[0]!.header.id])
    expect(repos.pins.ofBatch(b.id)).to.have.length(1)
  })

  describe('a batch\'s pins, from the page or read', () => {
    /** The batches whose pins a pass read from the table, in order. */
    function countReads(): BatchId[] {
      const reads: BatchId[] = []
      const read = repos.pins.deciding.bind(repos.pins)
      repos.pins.deciding = (batchId, batchHash, key, tx) => {
        reads.push(batchId as BatchId)
        return read(batchId, batchHash, key, tx)
      }
      return reads
    }

    it('takes the pins of a batch the page holds whole, and reads those of a batch across two pages (200 pins each)', async () => {
      // 199 single-topic messages, one with two topics across the first page's end, 49 more: 251 pins.
      const big = makeBatch('did:firefly:org/orgA', KEY_A, [...Array.from({ length: 199 }, () => ['t1']), ['t2', 't1'], ...Array.from({ length: 49 }, () => ['t1'])])
      const small = makeBatch('did:firefly:org/orgA', KEY_A, [['t1'], ['t2'], ['t1']])
      await arrive([big, KEY_A], [small, KEY_A])
      const reads = countReads()
      agg.start()
      await agg.whenIdle()
      expect(confirmedOrder()).to.deep.equal([...big.messages, ...small.messages].map((m) => m.header.id))
      // Each page held part of the big batch: read in both passes; the small one came whole in the second page.
      expect(reads).to.deep.equal([big.id, big.id])
      expect(repos.pins.undispatchedAfter(0, 1000)).to.deep.equal([])
    })

    it('ends a full page where a batch ends, so that batches of 150 pins are each taken whole from a page', async () => {
      const batches = [0, 1, 2].map(() => makeBatch('did:firefly:org/orgA', KEY_A, Array.from({ length: 150 }, (_, i) => [`t${i % 3}`])))
      await arrive(...batches.map((b): [ReturnType<typeof makeBatch>, string] => [b, KEY_A]))
      const reads = countReads()
      agg.start()
      await agg.whenIdle()
      expect(confirmedOrder()).to.deep.equal(batches.flatMap((b) => b.messages.map((m) => m.header.id)))
      expect(reads).to.deep.equal([])
      expect(repos.pins.undispatchedAfter(0, 1000)).to.deep.equal([])
    })

    it('takes the page\'s pins when the chain carried more than the manifest names, and leaves the extra one waiting', async () => {
      const b = makeBatch('did:firefly:org/orgA', KEY_A, [['t1'], ['t2']])
      await store(b)
      await pin(b, KEY_A)
      await db.transaction((tx) => repos.pins.insert(tx, { batchId: b.id, batchHash: b.hash as never, index: 2, hash: broadcastContext('t3'), masked: false, signer: KEY_A, eventId: newId() }))
      const reads = countReads()
      await settle()
      expect(confirmedOrder()).to.deep.equal(b.messages.map((m) => m.header.id))
      expect(reads).to.deep.equal([])
      expect(repos.pins.undispatchedAfter(0, 1000).map((p) => p.index)).to.deep.equal([2])
    })
  })

  describe('blobs and datatypes', () => {
    const blobHash = 'ab'.repeat(32) as Hash
    const withBlob = (extra: Partial<NonNullable<Data['blob']>> = {}) => () => ({ blob: { hash: blobHash, size: 10, name: 'f.bin', public: 'QmWhatever', ...extra } })

    const announced = { hash: blobHash, size: 10, public: 'QmWhatever' }

    it('holds a message (and its topic) until its blob reference is verified, then confirms in order', async () => {
      const b = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], withBlob())
      const next = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
      await arrive([b, KEY_A], [next, KEY_A])
      agg.start()
      await agg.whenIdle()
      expect(confirmedOrder()).to.deep.equal([])
      // Holding a blob with that hash is not enough: the announced reference must be verified first.
      await db.transaction((tx) => repos.blobs.insert(tx, { hash: blobHash, size: 10, created: now() }))
      await settle()
      expect(confirmedOrder()).to.deep.equal([])
      await db.transaction((tx) => repos.refs.settle(tx, announced, { ok: true }, now()))
      agg.recheckWaiting()
      await agg.whenIdle()
      expect(confirmedOrder()).to.deep.equal([b.messages[0]!.header.id, next.messages[0]!.header.id])
    })

    it('judges every pin of a message\'s first pinning alike, whether or not a wait came first: members cannot disagree', async () => {
      // Topics [t1, t2] pinned as [t1, t3] in one BatchPin event. A member holding the blob used to confirm at the
      // first pin; one still fetching it waited there, then rejected at the second: the verdict followed local timing.
      const pinAs = async (b: ReturnType<typeof makeBatch>, pins: { topic: string; signer: string }[], eventId = newId()) => {
        await db.transaction((tx) => pins.forEach((p, index) => repos.pins.insert(tx, { batchId: b.id, batchHash: b.hash as never, index, hash: broadcastContext(p.topic), masked: false, signer: p.signer, eventId })))
      }
      const held = makeBatch('did:firefly:org/orgA', KEY_A, [['t1', 't2']], withBlob())
      await store(held)
      await db.transaction((tx) => {
        repos.blobs.insert(tx, { hash: blobHash, size: 10, created: now() })
        repos.refs.settle(tx, announced, { ok: true }, now())
      })
      await pinAs(held, [{ topic: 't1', signer: KEY_A }, { topic: 't3', signer: KEY_A }])
      await settle()
      expect(repos.messages.get(held.messages[0]!.header.id)!.rejectReason).to.equal(`on-chain context ${broadcastContext('t3')} is not the hash of topic t2`)
      // Another key's pinning of it, landed first with other contexts, decides nothing: its own key's pins decide.
      const signed = makeBatch('did:firefly:org/orgA', KEY_A, [['t4', 't5']], withBlob())
      await store(signed)
      await pinAs(signed, [{ topic: 'x4', signer: KEY_B }, { topic: 'x5', signer: KEY_B }])
      await pinAs(signed, [{ topic: 't4', signer: KEY_A }, { topic: 't5', signer: KEY_A }])
      await settle()
      expect(repos.messages.get(signed.messages[0]!.header.id)!.state).to.equal('confirmed')
      // A pin of its range from a later event (a re-pin) comes after the verdict: the first pinning decides.
      const repinned = makeBatch('did:firefly:org/orgA', KEY_A, [['t6', 't7']])
      await store(repinned)
      await pinAs(repinned, [{ topic: 't6', signer: KEY_A }])
      await db.transaction((tx) => repos.pins.insert(tx, { batchId: repinned.id, batchHash: repinned.hash as never, index: 1, hash: broadcastContext('t8'), masked: false, signer: KEY_B, eventId: newId() }))
      await settle()
      expect(repos.messages.get(repinned.messages[0]!.header.id)!.state).to.equal('confirmed')
      // A pin naming another batch hash (a forgery that landed first, taking index 0) is not this batch's: its own
      // pins decide, as they did before any wait.
      const forged = makeBatch('did:firefly:org/orgA', KEY_A, [['t9', 't10']])
      await store(forged)
      await db.transaction((tx) => repos.pins.insert(tx, { batchId: forged.id, batchHash: 'ee'.repeat(32) as Hash, index: 0, hash: broadcastContext('zz'), masked: false, signer: KEY_B, eventId: newId() }))
      await pinAs(forged, [{ topic: 't9', signer: KEY_A }, { topic: 't10', signer: KEY_A }])
      await settle()
      expect(repos.messages.get(forged.messages[0]!.header.id)!.state).to.equal('confirmed')
    })

    it('rejects a message whose blob can never be obtained, without blocking its topic', async () => {
      const bad = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], withBlob())
      const unpublished = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], withBlob({ hash: 'cd'.repeat(32) as Hash, public: undefined }))
      const next = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']])
      for (const b of [bad, unpublished, next]) await store(b)
      // Even though this node holds a blob with the announced hash, the reference does not serve it.
      await db.transaction((tx) => {
        repos.blobs.insert(tx, { hash: blobHash, size: 10, created: now() })
        repos.refs.settle(tx, announced, { ok: false, reason: 'content hash differs' }, now())
      })
      for (const b of [bad, unpublished, next]) await pin(b, KEY_A)
      await settle()
      expect(repos.messages.get(bad.messages[0]!.header.id)!.rejectReason).to.contain('content hash differs')
      expect(repos.messages.get(unpublished.messages[0]!.header.id)!.rejectReason).to.contain('no shared-storage reference')
      expect(confirmedOrder()).to.deep.equal([next.messages[0]!.header.id])
    })

    it('rejects data naming a datatype nobody defined, and confirms conforming data of a known one', async () => {
      datatypes.set('widget/1.0', 0)
      const unknown = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], () => ({ datatype: { name: 'gadget', version: '1.0' } }))
      const known = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], () => ({ datatype: { name: 'widget', version: '1.0' } }))
      await arrive([unknown, KEY_A], [known, KEY_A])
      await settle()
      expect(repos.messages.get(unknown.messages[0]!.header.id)!.rejectReason).to.contain('gadget/1.0')
      expect(confirmedOrder()).to.deep.equal([known.messages[0]!.header.id])
    })

    it('rejects data whose datatype is known here but was defined after the message in chain order', async () => {
      // As a member would see it if the message's batch arrived only after the later definition was applied.
      const user = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], () => ({ datatype: { name: 'late', version: '1' } }))
      const definition = makeBatch('did:firefly:org/orgA', KEY_A, [['svc_ns_default']])
      await pin(user, KEY_A)
      await pin(definition, KEY_A)
      datatypes.set('late/1', repos.pins.ofBatch(definition.id)[0]!.seq)
      await db.transaction((tx) => repos.pins.markDispatched(tx, definition.id, 0, 0))
      await store(user)
      await settle()
      expect(repos.messages.get(user.messages[0]!.header.id)!.rejectReason).to.contain('only after this message')
    })

    it('waits for a datatype whose definition was ordered earlier but is not applied yet', async () => {
      // The definition's batch has not arrived: its pin on the namespace's definition topic is still waiting.
      const definition = makeBatch('did:firefly:org/orgA', KEY_A, [['svc_ns_default']])
      const user = makeBatch('did:firefly:org/orgA', KEY_A, [['t1']], () => ({ datatype: { name: 'widget', version: '2.0' } }))
      await store(user)
      await pin(definition, KEY_A)
      await pin(user, KEY_A)
      await settle()
      expect(repos.messages.get(user.messages[0]!.header.id)!.state).to.equal('pending')
      // The definition is applied (here: its pin dispatched and the datatype known) and the walk comes back.
      datatypes.set('widget/2.0', repos.pins.ofBatch(definition.id)[0]!.seq)
      await db.transaction((tx) => repos.pins.markDispatched(tx, definition.id, 0, 0))
      agg.recheckWaiting()
      await agg.whenIdle()
      expect(confirmedOrder()).to.deep.equal([user.messages[0]!.header.id])
    })
  })
})
