import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { waitUntil } from '../../../support/wait.js'
import { DeliveriesRepo } from '../../../../node/db/repos/deliveries.js'
import { DeliveryGate } from '../../../../node/messaging/delivery-gate.js'
import { DeliveryQueue, type DeliveryQueueDeps } from '../../../../node/messaging/delivery-queue.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { BatchPayload, Data } from '../../../../node/model/index.js'
import type { Peer } from '../../../../node/exchange/index.js'

const NODE1 = 'did:firefly:node/node1'
const NODE2 = 'did:firefly:node/node2'
const peers: Record<string, Peer> = {
  [NODE1]: { node: NODE1, org: 'org1', endpoint: 'https://127.0.0.1:1', cert: '' },
  [NODE2]: { node: NODE2, org: 'org2', endpoint: 'https://127.0.0.1:2', cert: '' },
}
const BLOB = 'a'.repeat(64) as Hash
const blobData = (): Data => ({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: null, blobHash: BLOB }), created: now(), value: null, blob: { hash: BLOB, size: 3, name: '' } })
/** The sealed batches "stored here", which a retry loads. */
const stored = new Map<BatchId, BatchPayload>()
const payload = (data: Data[] = []): BatchPayload => {
  const b = { id: newId<BatchId>(), data, messages: [{ header: { id: newId<MessageId>() } }] } as unknown as BatchPayload
  stored.set(b.id, b)
  return b
}
const content = (): AsyncIterable<Uint8Array> => ({ async *[Symbol.asyncIterator]() { yield new Uint8Array([1, 2, 3]) } })

/**
 * The delivery queue under the admin routes' gate and against failures of its own: over a real database, with the
 * exchange (its seam) recording what it was asked to send and failing as each test says.
 */
describe('private deliveries: the gate, and what fails around a send', () => {
  const temp = new TempDirs()
  let r: Repos
  let deliveries: DeliveriesRepo
  let sent: string[]
  let lines: string[]
  let queue: DeliveryQueue | undefined

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-delivery-'), 'db'))
    deliveries = new DeliveriesRepo(r.db)
    sent = []
    lines = []
  })
  afterEach(async () => {
    await queue?.stop()
    queue = undefined
    await r.db.close()
  })
  after(() => temp.cleanup())

  const make = (over: Partial<DeliveryQueueDeps> = {}): DeliveryQueue => {
    queue = new DeliveryQueue({
      db: r.db,
      deliveries,
      exchange: {
        sendBatch: async (p, b) => void sent.push(`${p.org} batch ${b.id}`),
        sendBlob: async (p, b) => void sent.push(`${p.org} blob ${b.hash.slice(0, 4)}`),
      },
      blob: () => content(),
      peerOf: (did) => peers[did],
      load: (id) => stored.get(id),
      log: (l) => lines.push(l),
      retryDelayMs: () => 1,
      stopGraceMs: 50,
      ...over,
    })
    return queue
  }
  const states = (b: BatchPayload): [string, string, number][] => deliveries.ofBatch(b.id).map((d) => [d.peer, d.state, d.attempts])

  it('parks a held delivery without counting an attempt, and sends it at once on release, whatever its backoff', async () => {
    const gate = new DeliveryGate()
    const q = make({ gate, retryDelayMs: () => 3_600_000 })
    gate.hold({ to: 'org1' })
    const b = payload()
    await q.enqueue(b, [NODE1, NODE2])
    await waitUntil('org2 served', () => sent.length === 1)
    expect(sent).to.deep.equal([`org2 batch ${b.id}`])
    expect(states(b)).to.deep.equal([[NODE1, 'pending', 0], [NODE2, 'done', 1]])
    expect(q.pendingTo('org1')).to.deep.equal([b.id])
    expect(q.pendingTo('org2')).to.deep.equal([])
    gate.release({ to: 'org1' })
    await waitUntil('org1 served', () => sent.length === 2)
    expect(states(b)).to.deep.equal([[NODE1, 'done', 1], [NODE2, 'done', 1]])
    expect(lines).to.deep.equal([])
  })

  it('parks a delivery waiting out its backoff when a hold comes, and lets one go for good when dropped', async () => {
    const gate = new DeliveryGate()
    let down = true
    const q = make({
      gate,
      retryDelayMs: () => 3_600_000,
      exchange: {
        sendBatch: async (p, b) => {
          if (down) throw new ParleyError('UNAVAILABLE', 'connection refused')
          sent.push(`${p.org} batch ${b.id}`)
        },
        sendBlob: async () => {},
      },
    })
    const b = payload()
    await q.enqueue(b, [NODE1])
    // Its line is written as its retry is scheduled (the row's attempt is counted a moment before).
    const failedOnce = (id: BatchId) => () => lines.some((l) => l.includes(id) && l.includes('(attempt 1)'))
    await waitUntil('the first attempt failed', failedOnce(b.id))
    // An hour's backoff, then a hold and a release: sent now, not in an hour.
    down = false
    gate.hold({ to: 'org1', batch: b.id })
    gate.release({ to: 'org1', batch: b.id })
    await waitUntil('sent on release', () => sent.length === 1)
    expect(states(b)).to.deep.equal([[NODE1, 'done', 2]])

    // Dropped while it waits out its backoff: never sent while the member runs, its row left pending.
    down = true
    const c = payload()
    await q.enqueue(c, [NODE1])
    await waitUntil('the first attempt failed', failedOnce(c.id))
    down = false
    gate.drop({ to: 'org1', batch: c.id })
    gate.hold({ to: 'org2' }) // another change of the rules: the dropped delivery stays let go
    gate.release({ to: 'org2' })
    expect(states(c)).to.deep.equal([[NODE1, 'pending', 1]])
    expect(sent).to.have.length(1)

    // Dropped before it is queued: not even a first attempt.
    const d = payload()
    gate.drop({ to: 'org1', batch: d.id })
    await q.enqueue(d, [NODE1])
    expect(states(d)).to.deep.equal([[NODE1, 'pending', 0]])
  })

  it('stops between a blob and its batch when a hold comes, sending only the batch on release', async () => {
    const gate = new DeliveryGate()
    const q = make({
      gate,
      exchange: {
        sendBlob: async (p, blob) => {
          sent.push(`${p.org} blob ${blob.hash.slice(0, 4)}`)
          gate.hold({ to: 'org1' })
        },
        sendBatch: async (p, b) => void sent.push(`${p.org} batch ${b.id}`),
      },
    })
    const b = payload([blobData()])
    await q.enqueue(b, [NODE1])
    await waitUntil('the blob sent', () => sent.length === 1)
    expect(states(b)).to.deep.equal([[NODE1, 'pending', 0]])
    gate.release({ to: 'org1' })
    await waitUntil('the batch sent', () => sent.length === 2)
    expect(sent).to.deep.equal(['org1 blob aaaa', `org1 batch ${b.id}`])
    expect(states(b)).to.deep.equal([[NODE1, 'done', 1]])
  })

  it('retries a peer not registered yet as unknown, though a gate holds its org', async () => {
    const gate = new DeliveryGate()
    gate.hold({ to: 'org3' })
    let known = false
    const org3 = 'did:firefly:node/node3'
    const q = make({ gate, peerOf: (did) => (did === org3 ? (known ? { ...peers[NODE1]!, node: org3, org: 'org3' } : undefined) : peers[did]) })
    const b = payload()
    await q.enqueue(b, [org3])
    await waitUntil('tried and found unknown', () => states(b)[0]![2] >= 1)
    expect(lines[0]).to.equal(`delivery: batch ${b.id} to ${org3} not delivered yet (attempt 1): peer ${org3} is not registered here yet; retrying`)
    // Registered now: its org's hold applies.
    known = true
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(sent).to.deep.equal([])
    gate.release({ to: 'org3' })
    await waitUntil('sent on release', () => sent.length === 1)
  })

  it('logs the first failure and every tenth, and the delivery after several attempts', async () => {
    let failures = 11
    const q = make({
      exchange: {
        sendBatch: async (p, b) => {
          if (failures-- > 0) throw new ParleyError('UNAVAILABLE', 'connection refused')
          sent.push(`${p.org} batch ${b.id}`)
        },
        sendBlob: async () => {},
      },
    })
    const b = payload()
    await q.enqueue(b, [NODE1])
    await waitUntil('delivered', () => states(b)[0]![1] === 'done', { timeoutMs: 20_000 })
    expect(lines).to.deep.equal([
      `delivery: batch ${b.id} to ${NODE1} not delivered yet (attempt 1): connection refused; retrying`,
      `delivery: batch ${b.id} to ${NODE1} not delivered yet (attempt 10): connection refused; retrying`,
      `delivery: batch ${b.id} delivered to ${NODE1} after 12 attempts`,
    ])
  })

  it('backs off a second after the first failure by default', async () => {
    const q = make({ retryDelayMs: undefined, exchange: { sendBatch: async () => { throw new ParleyError('UNAVAILABLE', 'down') }, sendBlob: async () => {} } })
    const b = payload()
    const before = Date.now()
    await q.enqueue(b, [NODE1])
    await waitUntil('failed once', () => states(b)[0]![2] === 1)
    const after = Date.now()
    const next = deliveries.ofBatch(b.id)[0]!.nextAt
    expect(next).to.be.at.least(before + 1000).and.at.most(after + 1000)
  })

  it('fails for good a resumed delivery whose batch is no longer stored here', async () => {
    const b = payload()
    stored.delete(b.id)
    await r.db.transaction((tx) => deliveries.enqueue(tx, b.id, [NODE1], now()))
    make().start()
    await waitUntil('settled', () => states(b)[0]![1] !== 'pending')
    expect(deliveries.ofBatch(b.id)[0]).to.deep.include({ state: 'failed', reason: `batch ${b.id} is not stored here` })
    expect(lines).to.deep.equal([`delivery: batch ${b.id} to ${NODE1} refused for good: batch ${b.id} is not stored here`])
  })

  it('tries again later when the database refuses the bookkeeping of a failure, the row still pending', async () => {
    let refusals = 1
    const failing = Object.create(deliveries) as DeliveriesRepo
    failing.retryAt = (...args: Parameters<DeliveriesRepo['retryAt']>) => {
      if (refusals-- > 0) throw new Error('SQLITE_FULL: database or disk is full')
      deliveries.retryAt(...args)
    }
    const q = make({ deliveries: failing, exchange: { sendBatch: async () => { throw new ParleyError('UNAVAILABLE', 'down') }, sendBlob: async () => {} } })
    const b = payload()
    await q.enqueue(b, [NODE1])
    await waitUntil('the refusal logged', () => lines.length === 1)
    expect(lines).to.deep.equal([`delivery: batch ${b.id} to ${NODE1}: SQLITE_FULL: database or disk is full; retrying`])
    expect(states(b)).to.deep.equal([[NODE1, 'pending', 0]])
  })

  it('refuses new deliveries once stopping, and leaves the bookkeeping of a send that fails after the stop', async () => {
    let fail!: (err: Error) => void
    const q = make({ exchange: { sendBatch: () => new Promise<void>((_resolve, reject) => (fail = reject)), sendBlob: async () => {} } })
    const b = payload()
    await q.enqueue(b, [NODE1])
    await waitUntil('the send under way', () => fail !== undefined)
    const stopping = q.stop()
    fail(new ParleyError('UNAVAILABLE', 'the exchange is stopping'))
    await stopping
    let refused: unknown
    await q.enqueue(payload(), [NODE1]).catch((e: unknown) => (refused = e))
    expect(refused).to.be.instanceOf(ParleyError).and.include({ code: 'UNAVAILABLE', message: 'private deliveries are stopping' })
    expect(states(b)).to.deep.equal([[NODE1, 'pending', 0]])
    expect(lines).to.deep.equal([])
  })
})
