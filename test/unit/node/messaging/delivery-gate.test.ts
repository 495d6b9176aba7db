import { expect } from 'chai'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'
import { DeliveriesRepo } from '../../../../node/db/repos/deliveries.js'
import { DeliveryQueue } from '../../../../node/messaging/delivery-queue.js'
import { DeliveryGate } from '../../../../node/messaging/delivery-gate.js'
import { Controls } from '../../../../node/admin/controls.js'
import { Gate } from '../../../../node/core/gate.js'
import { dataHash, messageHash } from '../../../../node/core/hashes.js'
import { isParleyError, ParleyError } from '../../../../node/core/errors.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { BatchPayload, BatchRecord, Data, Header, Message } from '../../../../node/model/index.js'
import type { Peer } from '../../../../node/exchange/index.js'
import { waitFor } from '../../../../network/process.js'

const KEY0 = '0x00000000000000000000000000000000000000a0'
const NODE1 = 'did:firefly:node/node1'
const NODE2 = 'did:firefly:node/node2'
/** The registered peers of registerMembers: node<i> of org<i>. */
const peerOf = (did: string): Peer => ({ node: did, org: did.replace('did:firefly:node/node', 'org'), endpoint: 'https://127.0.0.1:1', cert: '' })
const short = (did: string): string => did.split('/')[1]!

const hashA = 'a'.repeat(64) as Hash
const hashB = 'b'.repeat(64) as Hash

/** A private message of org0 (what the batch carries, or what the database holds for a message's rule). */
function privateMessage(batch?: BatchId): Message {
  const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: KEY0, created: now(), namespace: 'default', group: 'c'.repeat(64) as Hash, topics: ['t'], datahash: 'd'.repeat(64) as Hash }
  return { header, hash: messageHash(header), state: 'ready', data: [], ...(batch ? { batch } : {}) }
}

function blobData(hash: Hash): Data {
  return { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: null, blobHash: hash }), created: now(), value: null, blob: { hash, size: 3, name: '' } }
}

function payload(messages: Message[] = [privateMessage()], data: Data[] = []): BatchPayload {
  return { id: newId<BatchId>(), messages: messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data })), data } as unknown as BatchPayload
}

/**
 * The delivery queue with the admin routes' gate, over a real database, sending through an exchange that records
 * what it is given: holds park deliveries without counting attempts, a release sends at once (the retry delay is a
 * minute, so nothing here can be a retry or a poll), drops are never sent while the queue runs.
 */
describe('exchange controls: the delivery gate', () => {
  const temp = new TempDirs()
  let r: Repos
  let deliveries: DeliveriesRepo
  let gate: DeliveryGate
  let sent: string[]
  let logs: string[]
  let failNext: number
  /** Called before each send resolves (a test may act between blobs). */
  let onSend: (what: string) => void
  const stored = new Map<BatchId, BatchPayload>()
  const queues: DeliveryQueue[] = []

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-delivery-gate-'), 'db'))
    await registerMembers(r, 3)
    deliveries = new DeliveriesRepo(r.db)
    gate = new DeliveryGate()
    sent = []
    logs = []
    failNext = 0
    onSend = () => {}
    stored.clear()
  })
  afterEach(async () => {
    for (const q of queues.splice(0)) await q.stop()
    await r.db.close()
  })
  after(() => temp.cleanup())

  function queue(withGate: DeliveryGate | undefined = gate): DeliveryQueue {
    const record = (what: string): void => {
      if (failNext > 0) {
        failNext--
        throw new ParleyError('UNAVAILABLE', 'peer down')
      }
      sent.push(what)
      onSend(what)
    }
    const q = new DeliveryQueue({
      db: r.db,
      deliveries,
      exchange: {
        sendBatch: async (p, b) => record(`${short(p.node)} batch ${b.id}`),
        sendBlob: async (p, blob, content) => {
          for await (const _ of content) void _
          record(`${short(p.node)} blob ${blob.hash.slice(0, 1)}`)
        },
      },
      blob: () => ({ async *[Symbol.asyncIterator]() { yield new Uint8Array([1, 2, 3]) } }),
      peerOf,
      load: (id) => stored.get(id),
      log: (l) => logs.push(l),
      retryDelayMs: () => 60_000,
      ...(withGate ? { gate: withGate } : {}),
    })
    queues.push(q)
    return q
  }

  async function enqueue(q: DeliveryQueue, p: BatchPayload, peers = [NODE1, NODE2]): Promise<void> {
    stored.set(p.id, p)
    await q.enqueue(p, peers)
  }

  const row = (b: BatchId, peer: string) => deliveries.ofBatch(b).find((d) => d.peer === peer)!
  const sentTo = (node: string): string[] => sent.filter((s) => s.startsWith(`${short(node)} `))
  /** Long enough for a send that was going to happen to have happened (the exchange here answers at once). */
  const quiet = (): Promise<unknown> => sleep(100)
  const soon = (what: string, check: () => boolean): Promise<void> => waitFor(what, check, { timeoutMs: 10_000, intervalMs: 5 })

  it('a hold of all deliveries to an org: they wait, nothing counted or logged, others go; the release sends at once', async () => {
    const q = queue()
    gate.hold({ to: 'org1' })
    const b1 = payload()
    const b2 = payload()
    await enqueue(q, b1)
    await enqueue(q, b2)
    await soon('org2 to have both', () => sentTo(NODE2).length === 2)
    await quiet()
    expect(sentTo(NODE1)).to.deep.equal([])
    expect([row(b1.id, NODE1), row(b2.id, NODE1)].map((d) => [d.state, d.attempts])).to.deep.equal([['pending', 0], ['pending', 0]])
    expect(logs).to.deep.equal([])

    const t0 = Date.now()
    gate.release({ to: 'org1' })
    await soon('org1 to have both', () => row(b1.id, NODE1).state === 'done' && row(b2.id, NODE1).state === 'done')
    expect(Date.now() - t0, 'sent at the release, not after a retry delay').to.be.below(1_000)
    expect(sentTo(NODE1).sort()).to.deep.equal([`node1 batch ${b1.id}`, `node1 batch ${b2.id}`].sort())
    expect(row(b1.id, NODE1).attempts).to.equal(1)
    expect(logs).to.deep.equal([])
  })

  it('a hold by batch holds that batch only; a hold by message holds the batch it is sealed into once queued', async () => {
    const q = queue()
    const b1 = payload()
    const m = privateMessage()
    const b3 = payload([m])
    gate.hold({ to: 'org1', batch: b1.id })
    // The message is not in a batch yet: its rule names the batch when the batch is queued.
    gate.hold({ to: 'org1', message: m.header.id })
    const b2 = payload()
    await enqueue(q, b1)
    await enqueue(q, b2)
    await enqueue(q, b3)
    await soon('the batch nobody holds', () => row(b2.id, NODE1).state === 'done')
    await quiet()
    expect(sentTo(NODE1)).to.deep.equal([`node1 batch ${b2.id}`])
    expect(gate.view().held).to.deep.equal([
      { to: 'org1', batch: b1.id },
      { to: 'org1', message: m.header.id, batch: b3.id },
    ])
    // A release by batch frees the message's hold of that batch too.
    gate.release({ to: 'org1', batch: b3.id })
    await soon('b3', () => row(b3.id, NODE1).state === 'done')
    await quiet()
    expect(row(b1.id, NODE1).state).to.equal('pending')
    gate.release({ to: 'org1', batch: b1.id })
    await soon('b1', () => row(b1.id, NODE1).state === 'done')
    expect(gate.view().held).to.deep.equal([])
  })

  it('a delivery waiting out a retry backoff when held uses no retry: the release sends it at once, not a minute later', async () => {
    const q = queue()
    failNext = 1
    const b = payload()
    await enqueue(q, b, [NODE1])
    // The row changes in memory before its transaction is durable, and the line is logged after that.
    await soon('the failed attempt to be recorded and logged', () => row(b.id, NODE1).attempts === 1 && logs.some((l) => l.includes('not delivered yet')))
    expect(logs.filter((l) => l.includes('not delivered yet'))).to.have.length(1)
    gate.hold({ to: 'org1' })
    await quiet()
    expect(row(b.id, NODE1).attempts).to.equal(1)
    gate.release({ to: 'org1' })
    await soon('the delivery', () => row(b.id, NODE1).state === 'done')
    expect(row(b.id, NODE1).attempts).to.equal(2)
    expect(logs.filter((l) => l.includes('not delivered yet')), 'held, nothing more is logged').to.have.length(1)
  })

  it('the blobs of a held batch wait too, even when the hold comes between two of them', async () => {
    const q = queue()
    const b = payload([privateMessage()], [blobData(hashA), blobData(hashB)])
    onSend = (what) => {
      if (what === 'node1 blob a') gate.hold({ to: 'org1', batch: b.id })
    }
    await enqueue(q, b, [NODE1])
    await soon('blob a', () => sent.length === 1)
    await quiet()
    expect(sent).to.deep.equal(['node1 blob a'])
    expect(row(b.id, NODE1)).to.include({ state: 'pending', attempts: 0 })
    gate.release({ to: 'org1', batch: b.id })
    await soon('the batch', () => row(b.id, NODE1).state === 'done')
    // Blob a was acknowledged before the hold: it is not sent again.
    expect(sent).to.deep.equal(['node1 blob a', 'node1 blob b', `node1 batch ${b.id}`])
  })

  it('a drop discards a held delivery: it is never sent, even after the release; its row stays pending and a restart sends it', async () => {
    const q = queue()
    gate.hold({ to: 'org1' })
    const b = payload([privateMessage()], [blobData(hashA)])
    await enqueue(q, b)
    await soon('org2', () => row(b.id, NODE2).state === 'done')
    gate.drop({ to: 'org1', batch: b.id })
    gate.release({ to: 'org1' })
    await quiet()
    expect(sentTo(NODE1)).to.deep.equal([])
    expect(row(b.id, NODE1)).to.include({ state: 'pending', attempts: 0 })
    expect(gate.verdict(b.id, 'org1')).to.equal('dropped')

    // A restart forgets every control: the pending row is sent, as a recovered sender would.
    await q.stop()
    queue(new DeliveryGate()).start()
    await soon('the restarted queue to send it', () => row(b.id, NODE1).state === 'done')
    expect(sentTo(NODE1)).to.deep.equal(['node1 blob a', `node1 batch ${b.id}`])
  })

  it('a drop of a pending delivery waiting out its backoff cancels it', async () => {
    const q = queue()
    failNext = 1
    const b = payload()
    await enqueue(q, b, [NODE1])
    await soon('the failed attempt', () => row(b.id, NODE1).attempts === 1)
    gate.drop({ to: 'org1', batch: b.id })
    await q.stop()
    expect(row(b.id, NODE1)).to.include({ state: 'pending', attempts: 1 })
    expect(sent).to.deep.equal([])
  })

  it('a drop of a batch, or of a message before its batch is sealed, applies to deliveries queued later for it', async () => {
    const q = queue()
    const b1 = payload()
    const m = privateMessage()
    const b2 = payload([m])
    gate.drop({ to: 'org1', batch: b1.id })
    gate.drop({ to: 'org1', message: m.header.id })
    await enqueue(q, b1)
    await enqueue(q, b2)
    const b3 = payload()
    await enqueue(q, b3)
    await soon('what is not dropped', () => sentTo(NODE2).length === 3 && row(b3.id, NODE1).state === 'done')
    await quiet()
    expect(sentTo(NODE1)).to.deep.equal([`node1 batch ${b3.id}`])
    expect(gate.view().dropped).to.deep.equal([
      { to: 'org1', batch: b1.id },
      { to: 'org1', message: m.header.id, batch: b2.id },
    ])
  })

  it('a drop wins over a hold, and a hold of all deliveries to an org stays when one batch is released', () => {
    const b1 = newId<BatchId>()
    const b2 = newId<BatchId>()
    gate.hold({ to: 'org1' })
    gate.hold({ to: 'org1', batch: b1 })
    gate.hold({ to: 'org1', batch: b1 })
    expect(gate.view().held).to.have.length(2)
    gate.release({ to: 'org1', batch: b1 })
    expect([gate.verdict(b1, 'org1'), gate.verdict(b2, 'org1'), gate.verdict(b1, 'org2')]).to.deep.equal(['held', 'held', 'open'])
    gate.drop({ to: 'org1', batch: b2 })
    expect(gate.verdict(b2, 'org1')).to.equal('dropped')
    gate.release({ to: 'org1' })
    expect([gate.verdict(b1, 'org1'), gate.verdict(b2, 'org1')]).to.deep.equal(['open', 'dropped'])
  })

  describe('the controls capability', () => {
    let q: DeliveryQueue
    let controls: Controls
    const chain = new Gate()
    const ipfs = new Gate()

    beforeEach(() => {
      q = queue()
      controls = new Controls({ org: 'org0', deliveries: gate, pendingTo: (org) => q.pendingTo(org), chain, ipfs, identities: r.identities, messages: r.messages, batches: r.batches })
    })

    async function storeSent(m: Message, batch: BatchId): Promise<void> {
      const record = { id: batch, type: 'private', namespace: 'default', author: 'did:firefly:org/org0', key: KEY0, created: now(), hash: hashA, manifest: '{}', txId: newId<TxId>(), state: 'sealed', local: true } as BatchRecord
      await r.db.transaction((tx) => {
        r.batches.insert(tx, record)
        r.messages.insert(tx, { ...m, batch }, true)
      })
    }

    it('a hold by message resolves the batch holding it from the database; the answer is the controls in force', async () => {
      const m = privateMessage()
      const b = payload([m])
      await storeSent(m, b.id)
      const view = controls.holdDeliveries({ to: 'org1', message: m.header.id.toUpperCase() })
      expect(view).to.deep.equal({ exchange: { held: [{ to: 'org1', message: m.header.id, batch: b.id }], dropped: [] }, chain: { held: false }, ipfs: { held: false } })
      await enqueue(q, b)
      await soon('org2', () => row(b.id, NODE2).state === 'done')
      await quiet()
      expect(sentTo(NODE1)).to.deep.equal([])
      expect(controls.releaseDeliveries({ to: 'org1', message: m.header.id }).exchange.held).to.deep.equal([])
      await soon('org1', () => row(b.id, NODE1).state === 'done')
    })

    it('a drop to an org alone discards what is pending to it now, not what is queued later', async () => {
      gate.hold({ to: 'org1' })
      const b1 = payload()
      await enqueue(q, b1)
      const result = controls.dropDeliveries({ to: 'org1' })
      expect(result).to.deep.equal({ dropped: [{ to: 'org1', batch: b1.id }] })
      controls.releaseDeliveries({ to: 'org1' })
      const b2 = payload()
      await enqueue(q, b2)
      await soon('b2', () => row(b2.id, NODE1).state === 'done')
      await quiet()
      expect(sentTo(NODE1)).to.deep.equal([`node1 batch ${b2.id}`])
      expect(controls.view().exchange.dropped).to.deep.equal([{ to: 'org1', batch: b1.id }])
    })

    it('chain and IPFS holds are the gates the follower and the fetchers consult', () => {
      expect(controls.holdChain().chain.held).to.equal(true)
      expect(chain.held).to.equal(true)
      expect(controls.holdIpfs().ipfs.held).to.equal(true)
      expect(controls.releaseChain()).to.deep.include({ chain: { held: false }, ipfs: { held: true } })
      expect(controls.releaseIpfs().ipfs.held).to.equal(false)
    })

    it('refuses bodies that name no org, this org, an unknown one, a bad or unknown id, both forms, or an unknown field', async () => {
      const broadcast = { ...privateMessage(), header: { ...privateMessage().header, type: 'broadcast' as const } }
      const received = { ...privateMessage(), header: { ...privateMessage().header, author: 'did:firefly:org/org1' } }
      await storeSent(broadcast, newId<BatchId>())
      await storeSent(received, newId<BatchId>())
      const cases: [unknown, string, RegExp][] = [
        [[], 'INVALID_FIELD', /the body must be an object/],
        [{}, 'INVALID_FIELD', /to must be an org name: undefined/],
        [{ to: 'no such' }, 'INVALID_FIELD', /to must be an org name/],
        [{ to: 'org9' }, 'INVALID_FIELD', /to names no org registered here: "org9"/],
        [{ to: 'org0' }, 'INVALID_FIELD', /own org org0/],
        [{ to: 'org1', message: 'nope' }, 'INVALID_ID', /message is not a valid UUID: "nope"/],
        [{ to: 'org1', batch: 12 }, 'INVALID_ID', /batch is not a valid UUID: 12/],
        [{ to: 'org1', message: newId(), batch: newId() }, 'INVALID_FIELD', /message or batch, not both/],
        [{ to: 'org1', message: newId() }, 'INVALID_FIELD', /is not known to this member/],
        [{ to: 'org1', batch: newId() }, 'INVALID_FIELD', /is not known to this member/],
        [{ to: 'org1', message: broadcast.header.id }, 'INVALID_FIELD', /not a private message sent by this member/],
        [{ to: 'org1', message: received.header.id }, 'INVALID_FIELD', /not a private message sent by this member/],
        [{ to: 'org1', org: 'x' }, 'INVALID_FIELD', /"org" is not a field/],
      ]
      for (const [body, code, re] of cases) {
        for (const call of [(b: unknown) => controls.holdDeliveries(b), (b: unknown) => controls.releaseDeliveries(b), (b: unknown) => controls.dropDeliveries(b)]) {
          let thrown: unknown
          try {
            call(body)
          } catch (err) {
            thrown = err
          }
          expect(isParleyError(thrown, code as 'INVALID_FIELD'), `${JSON.stringify(body)}: ${String(thrown)}`).to.equal(true)
          expect((thrown as Error).message).to.match(re)
        }
      }
      expect(controls.view().exchange).to.deep.equal({ held: [], dropped: [] })
    })
  })
})
