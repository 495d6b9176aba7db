import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { PrivateChecks } from '../../../../node/aggregator/private-check.js'
import { pinIngest } from '../../../../node/aggregator/pin-ingest.js'
import { storeReceivedBatch } from '../../../../node/aggregator/store-batch.js'
import { DispatchProgress } from '../../../../node/batch/progress.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { DeliveriesRepo } from '../../../../node/db/repos/deliveries.js'
import { NextPinsRepo } from '../../../../node/db/repos/nextpins.js'
import { sealGroup } from '../../../../node/identity/group-resolver.js'
import { MessageTracer } from '../../../../node/trace/trace.js'
import { broadcastContext, dataHash, dataRefsHash, formatPin, identityTopic, messageHash, parsePin, privatePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now, timestampSortKey } from '../../../../node/core/time.js'
import { BATCH_PIN_ACTION, type BatchPayload, type Data, type Group, type Header, type Message, type MessageTrace } from '../../../../node/model/index.js'

const NS = 'default'
const KEY0 = '0x' + 'a0'.repeat(20)
const KEY1 = '0x' + 'a1'.repeat(20)
const ORG0 = 'did:firefly:org/org0'
const ORG1 = 'did:firefly:org/org1'
const NODE0 = 'did:firefly:node/node0'
const NODE1 = 'did:firefly:node/node1'
const NODE2 = 'did:firefly:node/node2'
const BLOB = 'b1'.repeat(32) as Hash

type Item = { message: Message; data: Data }

/**
 * The trace of a message on one member, built over a real database with the aggregator's real passes: each timeline
 * step from what is stored, and each reason a message waits as the aggregator's checks gave it.
 */
describe('message trace', () => {
  const temp = new TempDirs()
  let r: Repos
  let deliveries: DeliveriesRepo
  let agg: Aggregator
  let progress: DispatchProgress
  let tracer: MessageTracer
  let group: Group
  let ingest: ReturnType<typeof pinIngest>
  let block: number
  /** Datatypes the validator knows, as `name/version`, with the pin sequence of their definition. */
  let datatypes: Map<string, number>
  /** Deliveries a test control holds, as `<batch>/<peer>`. */
  let held: Set<string>

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-trace-'), 'db'))
    deliveries = new DeliveriesRepo(r.db)
    const ids = await registerMembers(r, 3)
    await r.db.transaction((tx) => {
      r.identities.insertVerifier(tx, { identity: ids.orgs[0]!, type: 'ethereum_address', value: KEY0, created: now() })
      r.identities.insertVerifier(tx, { identity: ids.orgs[1]!, type: 'ethereum_address', value: KEY1, created: now() })
    })
    const sealed = sealGroup(NS, '', [
      { identity: ORG0, node: ids.nodes[0]! as IdentityId },
      { identity: ORG1, node: ids.nodes[1]! as IdentityId },
    ])
    group = { hash: sealed.hash, namespace: NS, name: '', members: sealed.members, created: now() }
    await r.db.transaction((tx) => r.groups.insert(tx, group))
    datatypes = new Map()
    const lookup = (_ns: string, name: string, version: string) => {
      const orderedAt = datatypes.get(`${name}/${version}`)
      return orderedAt === undefined ? undefined : { check: () => undefined, orderedAt }
    }
    agg = new Aggregator({
      ...r,
      validator: new DataValidatorImpl(lookup),
      definitions: [],
      privateChecks: new PrivateChecks({ nextpins: new NextPinsRepo(r.db), pins: r.pins, groups: r.groups, identities: r.identities }),
      log: () => {},
      onOutcome: () => {},
    })
    progress = new DispatchProgress()
    held = new Set()
    tracer = new MessageTracer({
      ...r,
      deliveries,
      explain: (message, batch) => agg.explain(message, batch),
      progress: (id) => progress.of(id),
      deliveryControl: (batch, peer) => (held.has(`${batch}/${peer}`) ? 'held' : undefined),
      self: { org: 'org1', node: 'node1' },
    })
    ingest = pinIngest({ ...r, published: () => {}, fetch: () => {}, wake: () => {} })
    block = 0
    agg.start()
  })
  afterEach(async () => {
    await agg.stop()
    await r.db.close()
  })
  after(() => temp.cleanup())

  // ---- building messages, batches and pins ----

  function item(author: string, key: string, topics: string[], extra: Partial<Pick<Data, 'blob' | 'datatype'>> = {}, header: Partial<Header> = {}): Item {
    const value = JSON.stringify({ topics, n: Math.random() })
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: NS, hash: dataHash({ valueRaw: value, ...(extra.blob ? { blobHash: extra.blob.hash } : {}) }), created: now(), value, ...extra }
    const h: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author, key, created: now(), namespace: NS, topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]), ...header }
    return { message: { header: h, hash: messageHash(h), state: 'pending', data: [{ id: d.id, hash: d.hash }] }, data: d }
  }

  /** A private message of org0 in the group, with the pins of the nonces given (one per topic). */
  function privateItem(topics: string[], nonces: number[], extra: Partial<Pick<Data, 'blob'>> = {}): Item {
    const it = item(ORG0, KEY0, topics, extra, { type: 'private', group: group.hash })
    const pins = topics.map((t, i) => formatPin(privatePin(t, group.hash, ORG0, nonces[i]!), nonces[i]!))
    return { ...it, message: { ...it.message, pins } }
  }

  function batchOf(items: Item[], type: 'broadcast' | 'private' = 'broadcast'): { payload: BatchPayload; manifest: string } {
    const id = newId<BatchId>()
    const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
    const messages = items.map((i) => ({ header: i.message.header, hash: i.message.hash, data: i.message.data, ...(i.message.pins ? { pins: i.message.pins } : {}) }))
    const data = items.map((i) => i.data)
    const { hash, manifest } = sealManifest({ id, tx, messages, data })
    const first = items[0]!.message.header
    const payload: BatchPayload = { id, type, namespace: NS, node: NODE0, author: first.author, key: first.key, ...(type === 'private' ? { group: group.hash } : {}), created: now(), hash, tx, messages, data }
    return { payload, manifest }
  }

  /** Stored as the batch fetcher (broadcast, with its CID) or the private receiver stores a batch another member sent. */
  async function receive(b: { payload: BatchPayload; manifest: string }, cid = ''): Promise<void> {
    await r.db.transaction((tx) => storeReceivedBatch(r, tx, b.payload, b.manifest, cid))
    agg.batchArrived(b.payload.id)
    await agg.whenIdle()
  }

  /** Its BatchPin log read from the chain, as the follower hands it over: one context per topic per message. */
  async function pinOnChain(b: { payload: BatchPayload }, signer: string, payloadRef = ''): Promise<void> {
    const p = b.payload
    const contexts = p.messages.flatMap((m) => (m.pins ? m.pins.map((x) => parsePin(x).hash) : m.header.topics.map((t) => broadcastContext(t))))
    block++
    await ingest(
      [
        {
          blockNumber: block,
          txIndex: 0,
          logIndex: 3,
          protocolId: `${String(block).padStart(12, '0')}/000000/000003`,
          txHash: '0x' + block.toString(16).padStart(64, '0'),
          author: signer as never,
          timestamp: Math.floor(Date.now() / 1000),
          action: BATCH_PIN_ACTION,
          txId: p.tx.id,
          batchId: p.id,
          batchHash: p.hash,
          payloadRef,
          contexts,
        },
      ],
      block,
    )
    agg.wake()
    await agg.whenIdle()
  }

  const trace = (m: Item | Message): MessageTrace => {
    const id = 'message' in m ? m.message.header.id : m.header.id
    const t = tracer.trace(NS, id)
    expect(t, `trace of ${id}`).to.not.equal(undefined)
    return t!
  }
  const steps = (t: MessageTrace) => t.timeline.map((s) => s.step)
  const step = (t: MessageTrace, name: string) => t.timeline.find((s) => s.step === name)
  const expectOrdered = (t: MessageTrace): void => {
    const keys = t.timeline.map((s) => timestampSortKey(s.at))
    expect(keys, 'oldest first').to.deep.equal([...keys].sort())
  }

  // ---- lookups ----

  it('answers nothing for a message this member does not hold, or holds in another namespace', async () => {
    const m = item(ORG0, KEY0, ['t'])
    await receive(batchOf([m]), 'QmX')
    expect(tracer.trace(NS, newId<MessageId>())).to.equal(undefined)
    expect(tracer.trace('other', m.message.header.id)).to.equal(undefined)
    expect(trace(m)).to.include({ message: m.message.header.id, org: 'org1', node: 'node1', state: 'pending' })
  })

  // ---- timelines ----

  describe('the timeline', () => {
    it('of a broadcast on the member that sent it: accepted, sealed, uploaded (batch and blob), pinned, mined, confirmed, each with its time and fields', async () => {
      const m = item(ORG0, KEY0, ['t'], { blob: { hash: BLOB, size: 3, name: 'f', public: 'QmBlob' } })
      await r.db.transaction((tx) => {
        r.messages.insert(tx, { ...m.message, state: 'ready' }, true)
        r.data.insert(tx, m.data, false)
        r.blobs.insert(tx, { hash: BLOB, size: 3, created: now() })
      })
      let t = trace(m)
      expect(steps(t)).to.deep.equal(['accepted'])
      expect(t.waiting).to.include({ reason: 'pin', sealed: false, sent: false })

      // Sealed, as the assembler does it: the batch, its messages, its transaction_submitted.
      const b = batchOf([m])
      const record = { id: b.payload.id, type: 'broadcast' as const, namespace: NS, author: ORG0, key: KEY0, node: NODE0, created: now(), hash: b.payload.hash, manifest: b.manifest, txId: b.payload.tx.id, state: 'sealed' as const, local: true }
      await r.db.transaction((tx) => {
        r.batches.insert(tx, record)
        r.messages.assignBatch(tx, [{ id: m.message.header.id, hash: m.message.hash }], record.id, record.txId)
        r.events.insert(tx, { type: 'transaction_submitted', namespace: NS, reference: record.txId, tx: record.txId, topic: 'batch_pin' }, record.created)
      })
      t = trace(m)
      expect(t.waiting).to.include({ reason: 'pin', sealed: true, sent: false })
      expect(t.waiting!.detail).to.match(/being uploaded/)

      // Its blob is published first (the blob publisher records the reference), then the payload.
      await r.db.transaction((tx) => r.refs.settle(tx, { hash: BLOB, size: 3, public: 'QmBlob' }, { ok: true }, now()))
      progress.uploaded(record.id, 'QmBatch')
      t = trace(m)
      expect(t.waiting).to.include({ reason: 'pin', sealed: true, sent: false, cid: 'QmBatch' })
      expect(step(t, 'uploaded')).to.exist

      progress.sent(record.id, '0xfeed')
      t = trace(m)
      expect(t.waiting).to.include({ reason: 'pin', sent: true, chainTx: '0xfeed' })
      expect(t.waiting!.detail).to.match(/not mined yet/)

      // Mined: the assembler records the pin with the times it noted, and forgets them.
      const noted = progress.of(record.id)!
      await r.db.transaction((tx) => r.batches.setPinned(tx, record.id, '0xfeed', 'QmBatch', { uploaded: noted.uploaded!.at, pinSent: noted.sent!.at }))
      progress.forget(record.id)
      t = trace(m)
      expect(t.waiting!.detail).to.match(/was mined, but this member has not read it/)

      await pinOnChain(b, KEY0, 'QmBatch')
      t = trace(m)
      expect(t.state).to.equal('confirmed')
      expect(t.waiting).to.equal(undefined)
      expect(steps(t)).to.deep.equal(['accepted', 'sealed', 'uploaded', 'uploaded', 'pinned', 'mined', 'confirmed'])
      expectOrdered(t)
      expect(t.timeline[0]).to.include({ at: m.message.header.created })
      expect(t.timeline[2]).to.include({ blob: BLOB, cid: 'QmBlob' })
      expect(step(t, 'sealed')).to.include({ at: record.created, batch: record.id, tx: record.txId })
      expect(t.timeline[3]).to.include({ at: noted.uploaded!.at, batch: record.id, cid: 'QmBatch' })
      expect(step(t, 'pinned')).to.include({ at: noted.sent!.at, tx: record.txId, chainTx: '0xfeed' })
      expect(step(t, 'mined')).to.include({ block: 1, logIndex: 3, batch: record.id, tx: record.txId })
      expect(step(t, 'mined')!.chainTx).to.match(/^0x0+1$/)
      expect(step(t, 'confirmed')).to.include({ at: r.messages.get(m.message.header.id)!.confirmed })
    })

    it('of a broadcast on a member it was sent to: mined, received (with its CID), blob fetched, confirmed', async () => {
      const m = item(ORG0, KEY0, ['t'], { blob: { hash: BLOB, size: 3, name: 'f', public: 'QmBlob' } })
      const b = batchOf([m])
      await pinOnChain(b, KEY0, 'QmBatch')
      await receive(b, 'QmBatch')
      expect(trace(m).waiting).to.include({ reason: 'blob', blob: BLOB, cid: 'QmBlob' })
      await r.db.transaction((tx) => {
        r.blobs.insert(tx, { hash: BLOB, size: 3, created: now() })
        r.refs.settle(tx, { hash: BLOB, size: 3, public: 'QmBlob' }, { ok: true }, now())
      })
      agg.blobSettled()
      await agg.whenIdle()
      const t = trace(m)
      expect(t.state).to.equal('confirmed')
      expect(steps(t)).to.deep.equal(['mined', 'received', 'blob_fetched', 'confirmed'])
      expectOrdered(t)
      expect(step(t, 'received')).to.include({ batch: b.payload.id, cid: 'QmBatch', at: r.batches.get(b.payload.id)!.received })
      expect(step(t, 'blob_fetched')).to.include({ blob: BLOB, cid: 'QmBlob' })
      expect(t.waiting).to.equal(undefined)
      expect(agg.explain(r.messages.get(m.message.header.id)!, r.batches.get(b.payload.id)!), 'nothing holds a decided message').to.equal(undefined)
    })

    it('of a private message on a member it was sent to: received from its peer (before its pin), mined, blob received, confirmed', async () => {
      const m = privateItem(['t'], [0], { blob: { hash: BLOB, size: 3, name: 'f' } })
      const b = batchOf([m], 'private')
      await r.db.transaction((tx) => r.blobs.insert(tx, { hash: BLOB, size: 3, created: now() }))
      await receive(b)
      let t = trace(m)
      expect(t.waiting).to.include({ reason: 'pin' })
      expect(t.waiting!.detail).to.match(/not been read from the chain/)
      await pinOnChain(b, KEY0)
      t = trace(m)
      expect(t.state).to.equal('confirmed')
      expect(steps(t)).to.deep.equal(['blob_fetched', 'received', 'mined', 'confirmed'])
      expect(step(t, 'received')).to.include({ peer: NODE0, org: 'org0', batch: b.payload.id })
      expect(step(t, 'blob_fetched')).to.include({ blob: BLOB, peer: NODE0 })
    })

    it('of a private message on the member that sent it: a delivery step per peer node, with its state and time', async () => {
      const m = privateItem(['t'], [0])
      const b = batchOf([m], 'private')
      const record = { id: b.payload.id, type: 'private' as const, namespace: NS, author: ORG0, key: KEY0, node: NODE0, group: group.hash, created: now(), hash: b.payload.hash, manifest: b.manifest, txId: b.payload.tx.id, state: 'sealed' as const, local: true }
      await r.db.transaction((tx) => {
        r.messages.insert(tx, { ...m.message, state: 'ready', batch: record.id, txid: record.txId }, true)
        r.data.insert(tx, m.data, false)
        r.batches.insert(tx, record)
      })
      let t = trace(m)
      expect(t.waiting).to.include({ reason: 'delivery', sealed: true, sent: false })

      const queued = now()
      await r.db.transaction((tx) => deliveries.enqueue(tx, record.id, [NODE1, NODE2, 'did:firefly:node/node3'], queued))
      await r.db.transaction((tx) => {
        deliveries.done(tx, record.id, NODE1)
        deliveries.retryAt(tx, record.id, NODE2, Date.now() + 60_000, 'connection refused')
        deliveries.failed(tx, record.id, 'did:firefly:node/node3', 'not a member')
      })
      held.add(`${record.id}/${NODE2}`)
      t = trace(m)
      expect(t.waiting).to.include({ reason: 'pin', sealed: true, sent: false })
      expect(t.waiting!.detail).to.contain(`${NODE2} (org2) held`)
      const delivered = t.timeline.filter((s) => s.step === 'delivered')
      expect(delivered.map((s) => [s.peer, s.org, s.state])).to.have.deep.members([
        [NODE1, 'org1', 'done'],
        [NODE2, 'org2', 'held'],
        ['did:firefly:node/node3', 'did:firefly:node/node3', 'failed'],
      ])
      const byPeer = new Map(delivered.map((s) => [s.peer, s]))
      expect(timestampSortKey(byPeer.get(NODE1)!.at) > timestampSortKey(queued), 'a done delivery is at its acknowledgement').to.equal(true)
      expect(byPeer.get(NODE2)).to.include({ at: queued, attempts: 1, reason: 'connection refused' })
      expect(byPeer.get(NODE2)!.detail).to.match(/held by a test control/)
      expect(byPeer.get('did:firefly:node/node3')).to.include({ reason: 'not a member' })
      expectOrdered(t)
    })

    it('of a rejected message: the rejection with its reason', async () => {
      // Authored by org0, but signed (and pinned) with org1's key.
      const m = item(ORG0, KEY1, ['t'])
      const b = batchOf([m])
      await pinOnChain(b, KEY1, 'QmBatch')
      await receive(b, 'QmBatch')
      const t = trace(m)
      expect(t.state).to.equal('rejected')
      expect(t.waiting).to.equal(undefined)
      expect(steps(t)).to.deep.equal(['mined', 'received', 'rejected'])
      expect(step(t, 'rejected')!.reason).to.contain(KEY1)
    })
  })

  // ---- waiting reasons ----

  describe('why a message waits', () => {
    it('for its pin, on a member its private batch reached before its pin (the sender\'s stages are in the sender\'s timeline test)', async () => {
      const m = privateItem(['t'], [0])
      await receive(batchOf([m], 'private'))
      const t = trace(m)
      expect(t.waiting!.reason).to.equal('pin')
      expect(steps(t)).to.deep.equal(['received'])
    })

    it('blocked behind m1 on topic T: a private message whose earlier nonce is missing names m1 (author, nonce, topic, its batch once its pin is read, the peer its batch comes from)', async () => {
      const m1 = privateItem(['T'], [0])
      const m2 = privateItem(['T'], [1])
      const m3 = privateItem(['U'], [0])
      const [b1, b2, b3] = [batchOf([m1], 'private'), batchOf([m2], 'private'), batchOf([m3], 'private')]
      await receive(b2)
      await receive(b3)
      // m2's pin is read, m1's is not: m2 waits for nonce 0 on T, which has reached this member in no form yet.
      await pinOnChain(b2, KEY0)
      await pinOnChain(b3, KEY0)
      expect(trace(m3).state, 'another topic goes on').to.equal('confirmed')
      let t = trace(m2)
      expect(t.state).to.equal('pending')
      expect(t.waiting).to.deep.include({ reason: 'blocked', topic: 'T', peer: NODE0, org: 'org0', blockedBy: { author: ORG0, nonce: 0, topic: 'T' } })
      expect(t.waiting!.detail).to.match(/nonce 0 on topic T/).and.match(/neither its batch .* nor its pin has reached this member/)
      // Its ordering is checked again as the trace is read (the aggregator keeps no note of it): no `since`.
      expect(t.waiting!.since).to.equal(undefined)

      // m1's pin is read (its delivery is still held on the way): its batch is named.
      await pinOnChain(b1, KEY0)
      t = trace(m2)
      expect(t.waiting!.blockedBy).to.deep.equal({ author: ORG0, nonce: 0, topic: 'T', batch: b1.payload.id })
      expect(t.waiting!.detail).to.match(/its pin was read \(batch [0-9a-f-]+, block 3, log 3\), but its batch has not been delivered here from did:firefly:node\/node0 \(org0\) yet/)

      // m1 arrives: m1 then m2 are confirmed, and m2 waits no more.
      await receive(b1)
      expect([trace(m1).state, trace(m2).state]).to.deep.equal(['confirmed', 'confirmed'])
      expect(trace(m2).waiting).to.equal(undefined)
    })

    it('blocked behind m1 on topic T, m1 being here and waiting itself (for its blob): m1 is named by id, with its own reason', async () => {
      const m1 = privateItem(['T'], [0], { blob: { hash: BLOB, size: 3, name: 'f' } })
      const m2 = privateItem(['T'], [1])
      const [b1, b2] = [batchOf([m1], 'private'), batchOf([m2], 'private')]
      await receive(b1)
      await receive(b2)
      await pinOnChain(b1, KEY0)
      await pinOnChain(b2, KEY0)
      expect(trace(m1).waiting).to.deep.include({ reason: 'blob', blob: BLOB, peer: NODE0, org: 'org0' })
      // Its own check's reason, as the last pass that walked it found it, and when.
      expect(trace(m1).waiting!.since).to.be.a('string')
      const t = trace(m2)
      expect(t.waiting).to.deep.include({ reason: 'blocked', topic: 'T', blockedBy: { message: m1.message.header.id, author: ORG0, nonce: 0, topic: 'T', batch: b1.payload.id } })
      expect(t.waiting!.detail).to.contain(`blocked behind message ${m1.message.header.id}`).and.contain(`waits itself (its blob ${BLOB} is not held here yet`)
    })

    it('blocked behind a broadcast on the same topic whose batch is still being fetched from shared storage (the batch from IPFS, by its CID)', async () => {
      const m1 = item(ORG0, KEY0, ['T'])
      const m2 = item(ORG1, KEY1, ['T'])
      const [b1, b2] = [batchOf([m1]), batchOf([m2])]
      await pinOnChain(b1, KEY0, 'QmFirst')
      await pinOnChain(b2, KEY1, 'QmSecond')
      await receive(b2, 'QmSecond')
      const t = trace(m2)
      expect(t.waiting).to.deep.include({ reason: 'blocked', topic: 'T', cid: 'QmFirst', blockedBy: { author: ORG0, topic: 'T', batch: b1.payload.id } })
      expect(t.waiting!.detail).to.match(/its batch is not here yet; it is being fetched from shared storage \(QmFirst\)/)
      await receive(b1, 'QmFirst')
      expect([trace(m1).state, trace(m2).state]).to.deep.equal(['confirmed', 'confirmed'])
    })

    it('blocked behind a broadcast m1 that is here and waits for its blob: m1 by id', async () => {
      const m1 = item(ORG0, KEY0, ['T'], { blob: { hash: BLOB, size: 3, name: 'f', public: 'QmBlob' } })
      const m2 = item(ORG0, KEY0, ['T'])
      const b = batchOf([m1, m2])
      await pinOnChain(b, KEY0, 'QmBatch')
      await receive(b, 'QmBatch')
      expect(trace(m1).waiting).to.deep.include({ reason: 'blob', blob: BLOB, cid: 'QmBlob' })
      expect(trace(m1).waiting!.detail).to.match(/being fetched from shared storage \(QmBlob\)/)
      const t = trace(m2)
      expect(t.waiting).to.deep.include({ reason: 'blocked', topic: 'T', blockedBy: { message: m1.message.header.id, author: ORG0, topic: 'T', batch: b.payload.id } })
    })

    it('a long queue behind a waiting message costs the aggregator one note: those behind it are explained by running the ordering check again', async () => {
      const head = item(ORG0, KEY0, ['T'], { blob: { hash: BLOB, size: 3, name: 'f', public: 'QmBlob' } })
      const behind = Array.from({ length: 50 }, () => item(ORG0, KEY0, ['T']))
      const b = batchOf([head, ...behind])
      await pinOnChain(b, KEY0, 'QmBatch')
      await receive(b, 'QmBatch')
      expect(agg.notedWaits).to.equal(1)
      for (const m of [behind[0]!, behind[49]!]) expect(trace(m).waiting!.blockedBy).to.deep.include({ message: head.message.header.id, topic: 'T' })
    })

    it('for a blob not held here yet (private: its peer sends it)', async () => {
      const m = privateItem(['t'], [0], { blob: { hash: BLOB, size: 3, name: 'f' } })
      const b = batchOf([m], 'private')
      await receive(b)
      await pinOnChain(b, KEY0)
      const t = trace(m)
      expect(t.waiting).to.deep.include({ reason: 'blob', blob: BLOB, peer: NODE0, org: 'org0' })
      expect(t.waiting!.detail).to.equal(`its blob ${BLOB} is not held here yet: ${NODE0} (org0) sends it`)
    })

    it('for a datatype definition ordered before it and not applied yet (name and version)', async () => {
      const definition = item(ORG0, KEY0, ['svc_ns_default'])
      const m = item(ORG0, KEY0, ['t'], { datatype: { name: 'widget', version: '2.0' } })
      const [bd, bm] = [batchOf([definition]), batchOf([m])]
      await pinOnChain(bd, KEY0, 'QmDefinition')
      await pinOnChain(bm, KEY0, 'QmUser')
      await receive(bm, 'QmUser')
      const t = trace(m)
      expect(t.waiting).to.deep.include({ reason: 'datatype', datatype: { name: 'widget', version: '2.0' } })
      expect(t.waiting!.detail).to.equal('datatype widget/2.0: a datatype definition ordered before it is not applied yet')
    })

    it("for the author's identity: its claim, ordered before the message, is not applied yet (the DID)", async () => {
      const orgC = 'did:firefly:org/orgC'
      const keyC = '0x' + 'cc'.repeat(20)
      const claim = item(orgC, keyC, [identityTopic(orgC)])
      const m = item(orgC, keyC, ['t'])
      const [bc, bm] = [batchOf([claim]), batchOf([m])]
      await pinOnChain(bc, keyC, 'QmClaim')
      await pinOnChain(bm, keyC, 'QmUser')
      await receive(bm, 'QmUser')
      const t = trace(m)
      expect(t.waiting).to.deep.include({ reason: 'identity', author: orgC })
      expect(t.waiting!.detail).to.contain(orgC)
    })

    it('blocked while its group is not known here (behind the groupinit, not confirmed yet)', async () => {
      const other = sealGroup(NS, 'other', group.members)
      const it = item(ORG0, KEY0, ['t'], {}, { type: 'private', group: other.hash })
      const m = { ...it, message: { ...it.message, pins: [formatPin(privatePin('t', other.hash, ORG0, 0), 0)] } }
      const b = batchOf([m], 'private')
      b.payload.group = other.hash
      await receive(b)
      await pinOnChain(b, KEY0)
      const t = trace(m)
      expect(t.waiting!.reason).to.equal('blocked')
      expect(t.waiting!.detail).to.contain(`its group ${other.hash} is not known here yet`)
    })
  })
})
