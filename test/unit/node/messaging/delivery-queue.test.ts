import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'
import { DeliveriesRepo } from '../../../../node/db/repos/deliveries.js'
import { NextPinsRepo } from '../../../../node/db/repos/nextpins.js'
import { DeliveryQueue } from '../../../../node/messaging/delivery-queue.js'
import { PrivateReceiver } from '../../../../node/aggregator/private-receiver.js'
import { PrivateDispatcher } from '../../../../node/batch/private-dispatcher.js'
import { PrivateChecks } from '../../../../node/aggregator/private-check.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { groupinitFor, sealGroup } from '../../../../node/identity/group-resolver.js'
import { dataHash, dataRefsHash, formatPin, messageHash, parsePin, privatePin } from '../../../../node/core/hashes.js'
import { ParleyError, isParleyError } from '../../../../node/core/errors.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { localIdentity, type BatchPayload, type BatchRecord, type Data, type Group, type Header, type Message, type Pin } from '../../../../node/model/index.js'
import type { Peer } from '../../../../node/exchange/index.js'
import { OperationRecorder } from '../../../../node/operations/recorder.js'

const NS = 'default'
const KEY0 = '0x00000000000000000000000000000000000000a0'
const self0 = localIdentity('org0', 'node0', KEY0)
const self1 = localIdentity('org1', 'node1', '0x00000000000000000000000000000000000000a1')
const peer = (org: string, node: string): Peer => ({ node: `did:firefly:node/${node}`, org, endpoint: 'https://127.0.0.1:1', cert: '' })

function privateMessage(group: Hash, topics: string[], nonces: number[], value = '"v"'): { message: Message; data: Data } {
  const d: Data = { id: newId<DataId>(), validator: 'json', namespace: NS, hash: dataHash({ valueRaw: value }), created: now(), value }
  const header: Header = {
    id: newId<MessageId>(),
    type: 'private',
    txtype: 'batch_pin',
    author: self0.orgDid,
    key: KEY0,
    created: now(),
    namespace: NS,
    group,
    topics,
    datahash: dataRefsHash([{ id: d.id, hash: d.hash }]),
  }
  const pins = topics.map((t, i) => formatPin(privatePin(t, group, self0.orgDid, nonces[i]!), nonces[i]!))
  return { message: { header, hash: messageHash(header), state: 'ready', data: [{ id: d.id, hash: d.hash }], pins }, data: d }
}

function batchOf(items: { message: Message; data: Data }[], group: Hash): BatchPayload {
  const id = newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const messages = items.map((i) => ({ header: i.message.header, hash: i.message.hash, data: i.message.data, ...(i.message.pins ? { pins: i.message.pins } : {}) }))
  const data = items.map((i) => i.data)
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'private', namespace: NS, node: self0.nodeDid, author: self0.orgDid, key: KEY0, group, created: now(), hash, tx, messages, data }
}

describe('private messaging: units', () => {
  const temp = new TempDirs()
  let r: Repos
  let ids: { orgs: IdentityId[]; nodes: IdentityId[] }
  let group: Group

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-private-'), 'db'))
    ids = await registerMembers(r, 3)
    const sealed = sealGroup(NS, '', [
      { identity: self0.orgDid, node: ids.nodes[0]! },
      { identity: self1.orgDid, node: ids.nodes[1]! },
    ])
    group = { hash: sealed.hash, namespace: NS, name: '', members: sealed.members, created: now() }
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  describe('the private dispatcher', () => {
    it('allocates consecutive nonces per (topic, group, author) at sealing, records the pins, and pins them as contexts', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const d = new PrivateDispatcher({ messages: r.messages, nonces: r.nonces, groups: r.groups, identities: r.identities, self: self0, delivery: { enqueue: async () => {} } })
      const a = privateMessage(group.hash, ['a', 'b'], [0, 0])
      const b = privateMessage(group.hash, ['a'], [0])
      const msgs = [a, b].map((x) => ({ ...x.message, pins: undefined }) as unknown as Message)
      await r.db.transaction((tx) => r.messages.insertMany(tx, msgs, true))
      const record = { id: newId<BatchId>(), group: group.hash } as unknown as BatchRecord
      let sealed: Message[] = []
      await r.db.transaction((tx) => (sealed = d.seal(tx, record, msgs)))
      expect(sealed.map((m) => m.pins!.map((p) => parsePin(p).nonce))).to.deep.equal([[0, 0], [1]])
      expect(sealed[1]!.pins![0]).to.equal(formatPin(privatePin('a', group.hash, self0.orgDid, 1), 1))
      // Recorded in one statement for the batch, as the text a message's pins are kept in.
      for (const m of sealed) expect(r.db.get<{ pins: string }>('SELECT pins FROM messages WHERE id = ?', [m.header.id])!.pins).to.equal(JSON.stringify(m.pins))
      const contexts = d.contexts({ record, payload: { messages: sealed } as unknown as BatchPayload })
      expect(contexts).to.deep.equal(sealed.flatMap((m) => m.pins!.map((p) => parsePin(p).hash)))
      // The next seal goes on from there.
      const c = { ...privateMessage(group.hash, ['a'], [0]).message, pins: undefined } as unknown as Message
      await r.db.transaction((tx) => r.messages.insert(tx, c, true))
      await r.db.transaction((tx) => (sealed = d.seal(tx, record, [c])))
      expect(parsePin(sealed[0]!.pins![0]!).nonce).to.equal(2)
    })

    it('prepare delivers to every member node but this one and answers an empty payload reference', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const to: string[][] = []
      const d = new PrivateDispatcher({ messages: r.messages, nonces: r.nonces, groups: r.groups, identities: r.identities, self: self0, delivery: { enqueue: async (_p, peers) => void to.push([...peers]) } })
      const ref = await d.prepare({ record: { group: group.hash } as BatchRecord, payload: {} as BatchPayload }, new AbortController().signal)
      expect(ref).to.equal('')
      expect(to).to.deep.equal([[self1.nodeDid]])
    })
  })

  describe('the delivery queue', () => {
    const payload = (): BatchPayload => ({ id: newId<BatchId>(), data: [] as Data[] }) as BatchPayload

    /** Polls until no row of the batch is pending (no fixed sleep); the limit only turns a hang into a failure. */
    async function settled(deliveries: DeliveriesRepo, id: BatchId): Promise<void> {
      for (let i = 0; i < 500 && deliveries.ofBatch(id).some((d) => d.state === 'pending'); i++) await new Promise((res) => setTimeout(res, 10))
    }

    it('answers once the rows are durable, before any peer has the batch; retries what may work later, marks a final refusal failed', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const calls: string[] = []
      let failures = 2
      let open!: () => void
      const gate = new Promise<void>((res) => (open = res))
      const q = new DeliveryQueue({
        db: r.db,
        deliveries,
        exchange: {
          sendBatch: async (p) => {
            await gate
            calls.push(p.node)
            if (p.node.endsWith('node1') && failures-- > 0) throw new ParleyError('UNAVAILABLE', 'down')
            if (p.node.endsWith('node2')) throw new ParleyError('BAD_REQUEST', 'refused')
          },
          sendBlob: async () => {},
        },
        blob: () => undefined,
        peerOf: (did) => peer('x', did.split('/')[1]!),
        load: () => b,
        log: () => {},
        retryDelayMs: () => 5,
      })
      q.start()
      const b = payload()
      await q.enqueue(b, [self1.nodeDid, 'did:firefly:node/node2'])
      // Enqueued and durable while no peer has answered: the pin need not wait for them.
      expect(calls).to.deep.equal([])
      expect(deliveries.ofBatch(b.id).map((x) => x.state)).to.deep.equal(['pending', 'pending'])
      open()
      await settled(deliveries, b.id)
      expect(calls.filter((c) => c.endsWith('node1'))).to.have.length(3)
      expect(deliveries.ofBatch(b.id).map((x) => [x.peer, x.state, x.attempts])).to.deep.equal([
        [self1.nodeDid, 'done', 3],
        ['did:firefly:node/node2', 'failed', 1],
      ])
      // Enqueued again (a restart before the pin) finds the rows settled and sends nothing more.
      await q.enqueue(b, [self1.nodeDid, 'did:firefly:node/node2'])
      await new Promise((res) => setTimeout(res, 30))
      expect(calls).to.have.length(4)
      await q.stop()
    })

    it('records each delivery as an operation of the batch transaction, settled in the same transaction as its row', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const b = batchOf([privateMessage(group.hash, ['a'], [0])], group.hash)
      const q = new DeliveryQueue({
        db: r.db,
        deliveries,
        exchange: { sendBatch: async (p) => { if (p.node.endsWith('node2')) throw new ParleyError('BAD_REQUEST', 'refused') }, sendBlob: async () => {} },
        blob: () => undefined,
        peerOf: (did) => peer('x', did.split('/')[1]!),
        load: () => b,
        log: () => {},
        retryDelayMs: () => 5,
        operationRecorder: new OperationRecorder({ operations: r.operations, identities: r.identities }),
      })
      await q.enqueue(b, [self1.nodeDid, 'did:firefly:node/node2'])
      await settled(deliveries, b.id)
      const ops = r.operations.list(NS, { limit: 10, skip: 0 })
      expect(ops.map((o) => [o.type, o.tx, o.input['node'], o.status, o.error])).to.have.deep.members([
        ['dataexchange_send_batch', b.tx.id, ids.nodes[1], 'Succeeded', undefined],
        ['dataexchange_send_batch', b.tx.id, ids.nodes[2], 'Failed', 'refused'],
      ])
      await q.stop()
    })

    it('resumes pending rows at start (after a restart), loading the batch from the database', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const b = payload()
      await r.db.transaction((tx) => deliveries.enqueue(tx, b.id, [self1.nodeDid], now()))
      const sent: BatchId[] = []
      const q = new DeliveryQueue({ db: r.db, deliveries, exchange: { sendBatch: async (_p, x) => void sent.push(x.id), sendBlob: async () => {} }, blob: () => undefined, peerOf: (did) => peer('org1', did), load: (id) => (id === b.id ? b : undefined), log: () => {}, retryDelayMs: () => 5 })
      q.start()
      await settled(deliveries, b.id)
      expect(sent).to.deep.equal([b.id])
      expect(deliveries.ofBatch(b.id)[0]!.state).to.equal('done')
      await q.stop()
    })

    it('an unknown peer is retried, not failed', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      let known = false
      const b = payload()
      const q = new DeliveryQueue({ db: r.db, deliveries, exchange: { sendBatch: async () => {}, sendBlob: async () => {} }, blob: () => undefined, peerOf: (did) => (known ? peer('org1', did) : undefined), load: () => b, log: () => {}, retryDelayMs: () => 5 })
      await q.enqueue(b, [self1.nodeDid])
      await new Promise((res) => setTimeout(res, 30))
      expect(deliveries.ofBatch(b.id)[0]!.state).to.equal('pending')
      known = true
      await settled(deliveries, b.id)
      expect(deliveries.ofBatch(b.id)[0]!.state).to.equal('done')
      await q.stop()
    })

    it('stops promptly even while a send hangs (its row stays pending for the next start)', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const b = payload()
      const q = new DeliveryQueue({ db: r.db, deliveries, exchange: { sendBatch: () => new Promise<void>(() => {}), sendBlob: async () => {} }, blob: () => undefined, peerOf: (did) => peer('org1', did), load: () => b, log: () => {}, retryDelayMs: () => 5, stopGraceMs: 50 })
      await q.enqueue(b, [self1.nodeDid])
      await new Promise((res) => setTimeout(res, 20))
      const t0 = Date.now()
      await q.stop()
      expect(Date.now() - t0).to.be.below(10_000)
      expect(deliveries.ofBatch(b.id)[0]!.state).to.equal('pending')
    })

    const hashA = 'a'.repeat(64) as Hash
    const hashB = 'b'.repeat(64) as Hash
    const blobData = (hash: Hash, size: number): Data => ({ id: newId<DataId>(), validator: 'json', namespace: NS, hash: dataHash({ valueRaw: null, blobHash: hash }), created: now(), value: null, blob: { hash, size, name: '' } })
    const withBlobs = (): BatchPayload => ({ id: newId<BatchId>(), data: [blobData(hashA, 3), blobData(hashB, 5), blobData(hashA, 3)] }) as BatchPayload
    const content = (hash: Hash): AsyncIterable<Uint8Array> => ({ async *[Symbol.asyncIterator]() { yield new TextEncoder().encode(hash.slice(0, 3)) } })

    it('sends each distinct blob of the batch before the batch, each once per peer; a blob that failed is sent again, an acknowledged one is not', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const calls: string[] = []
      let failB = 1
      const b = withBlobs()
      const q = new DeliveryQueue({
        db: r.db,
        deliveries,
        exchange: {
          sendBlob: async (p, blob, c) => {
            for await (const _ of c) void _
            calls.push(`${p.node.split('/')[1]} blob ${blob.hash.slice(0, 1)} ${blob.size}`)
            if (blob.hash === hashB && failB-- > 0) throw new ParleyError('UNAVAILABLE', 'down')
          },
          sendBatch: async (p) => void calls.push(`${p.node.split('/')[1]} batch`),
        },
        blob: content,
        peerOf: (did) => peer('x', did.split('/')[1]!),
        load: () => b,
        log: () => {},
        retryDelayMs: () => 5,
      })
      await q.enqueue(b, [self1.nodeDid])
      await settled(deliveries, b.id)
      expect(calls).to.deep.equal(['node1 blob a 3', 'node1 blob b 5', 'node1 blob b 5', 'node1 batch'])
      expect(deliveries.ofBatch(b.id)[0]!.state).to.equal('done')
      expect(deliveries.blobDelivered(self1.nodeDid, hashA) && deliveries.blobDelivered(self1.nodeDid, hashB)).to.equal(true)
      expect(deliveries.blobDelivered('did:firefly:node/node2', hashA)).to.equal(false)
      // Another batch with the same blobs, to the same peer and a new one: only the new peer gets them.
      const b2 = { ...withBlobs(), id: newId<BatchId>() }
      calls.length = 0
      await q.enqueue(b2, [self1.nodeDid, 'did:firefly:node/node2'])
      await settled(deliveries, b2.id)
      expect(calls.filter((c) => c.startsWith('node1'))).to.deep.equal(['node1 batch'])
      expect(calls.filter((c) => c.startsWith('node2'))).to.deep.equal(['node2 blob a 3', 'node2 blob b 5', 'node2 batch'])
      await q.stop()
    })

    it('records each blob a peer acknowledged as a dataexchange_send_blob operation of the batch transaction', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const b = { ...withBlobs(), namespace: NS, tx: { type: 'batch_pin' as const, id: newId<TxId>() } }
      const q = new DeliveryQueue({
        db: r.db,
        deliveries,
        exchange: { sendBlob: async (_p, _b, c) => { for await (const _ of c) void _ }, sendBatch: async () => {} },
        blob: content,
        peerOf: (did) => peer('x', did.split('/')[1]!),
        load: () => b,
        log: () => {},
        retryDelayMs: () => 5,
        operationRecorder: new OperationRecorder({ operations: r.operations, identities: r.identities }),
      })
      await q.enqueue(b, [self1.nodeDid])
      await settled(deliveries, b.id)
      const blobs = r.operations.list(NS, { limit: 10, skip: 0 }).filter((o) => o.type === 'dataexchange_send_blob')
      // The first data item carrying each blob names it.
      expect(blobs.map((o) => [o.tx, o.status, o.input])).to.have.deep.members([
        [b.tx.id, 'Succeeded', { node: ids.nodes[1], hash: hashA, data_id: b.data[0]!.id }],
        [b.tx.id, 'Succeeded', { node: ids.nodes[1], hash: hashB, data_id: b.data[1]!.id }],
      ])
      await q.stop()
    })

    it('a delivery resumed after a restart sends the blobs not acknowledged yet, then the batch', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const b = withBlobs()
      // Before the restart: the row was queued and blob a acknowledged, then the node stopped.
      await r.db.transaction((tx) => {
        deliveries.enqueue(tx, b.id, [self1.nodeDid], now())
        deliveries.blobAcknowledged(tx, self1.nodeDid, hashA, now())
      })
      const calls: string[] = []
      const q = new DeliveryQueue({
        db: r.db,
        deliveries,
        exchange: { sendBlob: async (_p, blob) => void calls.push(`blob ${blob.hash.slice(0, 1)}`), sendBatch: async () => void calls.push('batch') },
        blob: content,
        peerOf: (did) => peer('org1', did),
        load: (id) => (id === b.id ? b : undefined),
        log: () => {},
        retryDelayMs: () => 5,
      })
      q.start()
      await settled(deliveries, b.id)
      expect(calls).to.deep.equal(['blob b', 'batch'])
      expect(deliveries.ofBatch(b.id)[0]!.state).to.equal('done')
      await q.stop()
    })

    it('a blob this node does not hold fails the delivery for good, and the batch is not sent', async () => {
      const deliveries = new DeliveriesRepo(r.db)
      const b = withBlobs()
      const calls: string[] = []
      const q = new DeliveryQueue({
        db: r.db,
        deliveries,
        exchange: { sendBlob: async (_p, blob) => void calls.push(`blob ${blob.hash.slice(0, 1)}`), sendBatch: async () => void calls.push('batch') },
        blob: (h) => (h === hashA ? content(h) : undefined),
        peerOf: (did) => peer('org1', did),
        load: () => b,
        log: () => {},
        retryDelayMs: () => 5,
      })
      await q.enqueue(b, [self1.nodeDid])
      await settled(deliveries, b.id)
      expect(calls).to.deep.equal(['blob a'])
      const row = deliveries.ofBatch(b.id)[0]!
      expect([row.state, row.reason]).to.deep.equal(['failed', `blob ${hashB} of batch ${b.id} is not held here`])
      await q.stop()
    })
  })

  describe('masked pin checks (next expected nonce per context and author)', () => {
    const chainPin = (m: Message, i = 0): Pin => ({ hash: parsePin(m.pins![i]!).hash, seq: 1, signer: '0x' + 'aa'.repeat(20) }) as Pin
    it('confirms only the next nonce; a later one waits; an earlier one, a wrong pin or a wrong chain pin is refused', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const checks = new PrivateChecks({ nextpins: new NextPinsRepo(r.db), pins: r.pins, groups: r.groups, identities: r.identities })
      const record = { node: self0.nodeDid } as BatchRecord
      const m0 = privateMessage(group.hash, ['a'], [0]).message
      const m1 = privateMessage(group.hash, ['a'], [1]).message
      const other = privateMessage(group.hash, ['b'], [0]).message
      await r.db.transaction((tx) => {
        expect(checks.check(tx, m1, record, [chainPin(m1)]).kind, 'nonce 1 before 0').to.equal('wait')
        // Another topic is not held by topic a.
        expect(checks.check(tx, other, record, [chainPin(other)]).kind).to.equal('ok')
        const ok = checks.check(tx, m0, record, [chainPin(m0)])
        expect(ok.kind).to.equal('ok')
        if (ok.kind === 'ok') ok.advance(tx)
        expect(checks.check(tx, m1, record, [chainPin(m1)]).kind, 'nonce 1 after 0').to.equal('ok')
        expect(checks.check(tx, m0, record, [chainPin(m0)]).kind, 'nonce 0 again').to.equal('reject')
        expect(checks.check(tx, m1, record, [chainPin(other)]).kind, 'chain pin of another message').to.equal('reject')
        const lying = { ...m1, pins: [formatPin(parsePin(m0.pins![0]!).hash, 1)] }
        expect(checks.check(tx, lying, record, [chainPin(lying)]).kind, 'pin not of its nonce').to.equal('reject')
        expect(checks.check(tx, m1, record, [undefined]).kind).to.equal('wait')
      })
    })

    it('waits while the group is not known; refuses an author outside it', async () => {
      const checks = new PrivateChecks({ nextpins: new NextPinsRepo(r.db), pins: r.pins, groups: r.groups, identities: r.identities })
      const m0 = privateMessage(group.hash, ['a'], [0]).message
      await r.db.transaction((tx) => expect(checks.check(tx, m0, { node: self0.nodeDid } as BatchRecord, [chainPin(m0)]).kind).to.equal('wait'))
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      await r.db.transaction((tx) => expect(checks.check(tx, m0, { node: 'did:firefly:node/node2' } as BatchRecord, [chainPin(m0)]).kind).to.equal('reject'))
    })
  })

  describe('the receiver (org1 receiving from org0)', () => {
    let arrived: BatchId[]
    let receiver: PrivateReceiver
    beforeEach(() => {
      arrived = []
      receiver = new PrivateReceiver({ ...r, self: self1, arrived: (id) => arrived.push(id) })
    })
    const refused = async (p: Promise<void>, re: RegExp, code: 'BAD_PEER_DATA' | 'UNAVAILABLE' = 'BAD_PEER_DATA'): Promise<void> => {
      try {
        await p
      } catch (err) {
        expect(isParleyError(err, code), String(err)).to.equal(true)
        expect((err as Error).message).to.match(re)
        return
      }
      expect.fail('not refused')
    }

    it('stores a batch defining its group by groupinit (messages pending), and the same batch again resolves', async () => {
      const init = groupinitFor(group, self0)
      const m = privateMessage(group.hash, ['a'], [0])
      const initItem = { message: { ...init.message, pins: [formatPin(privatePin(group.hash, group.hash, self0.orgDid, 0), 0)] }, data: init.data }
      const b = batchOf([initItem, m], group.hash)
      await receiver.handle(peer('org0', 'node0'), b)
      expect(arrived).to.deep.equal([b.id])
      expect(r.messages.get(m.message.header.id)!.state).to.equal('pending')
      expect(r.batches.get(b.id)!.state).to.equal('received')
      await receiver.handle(peer('org0', 'node0'), b)
      expect(arrived).to.have.length(1)
      // Held already, a copy is not verified again, and changes nothing of what is held.
      const value = r.data.get(m.data.id)!.value
      await receiver.handle(peer('org0', 'node0'), { ...b, data: b.data.map((d) => ({ ...d, value: '"changed"' })) })
      expect([arrived.length, r.data.get(m.data.id)!.value]).to.deep.equal([1, value])
      // A later batch of the same group, before the groupinit is confirmed, is accepted too (the groupinit is held).
      const b2 = batchOf([privateMessage(group.hash, ['a'], [1])], group.hash)
      await receiver.handle(peer('org0', 'node0'), b2)
      expect(arrived).to.deep.equal([b.id, b2.id])
    })

    it('refuses (nothing stored): a tampered batch, a peer of another org, a group without this node; an unknown group is not yet (retried), not refused', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const tampered = batchOf([privateMessage(group.hash, ['a'], [0])], group.hash)
      tampered.data = [{ ...tampered.data[0]!, value: '"changed"' }]
      await refused(receiver.handle(peer('org0', 'node0'), tampered), /does not verify/)
      await refused(receiver.handle(peer('org2', 'node2'), batchOf([privateMessage(group.hash, ['a'], [0])], group.hash)), /authored by/)
      const unknown = sealGroup(NS, 'x', group.members).hash
      // Its groupinit may be in a batch still on its way: the peer is told to try again, not to give up.
      await refused(receiver.handle(peer('org0', 'node0'), batchOf([privateMessage(unknown, ['a'], [0])], unknown)), /not known here yet/, 'UNAVAILABLE')
      const without = sealGroup(NS, '', [
        { identity: self0.orgDid, node: ids.nodes[0]! },
        { identity: 'did:firefly:org/org2', node: ids.nodes[2]! },
      ])
      await r.db.transaction((tx) => r.groups.insert(tx, { hash: without.hash, namespace: NS, name: '', members: without.members, created: now() }))
      await refused(receiver.handle(peer('org0', 'node0'), batchOf([privateMessage(without.hash, ['a'], [0])], without.hash)), /not a member/)
      expect(arrived).to.deep.equal([])
      expect(r.batches.get(tampered.id)).to.equal(undefined)
    })
  })
})
