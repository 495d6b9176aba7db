import { expect } from 'chai'
import { join } from 'node:path'
import { MIN_BATCH_CHARGE_BYTES } from '../../node/aggregator/unpinned-quota.js'
import type { BatchId } from '../../node/core/ids.js'
import { DeliveriesRepo } from '../../node/db/repos/deliveries.js'
import { DeliveryQueue } from '../../node/messaging/delivery-queue.js'
import { nodeDid, type BatchPayload } from '../../node/model/index.js'
import { AggregatorMember, groupOf, pinLogOf, privateBatch, registeredOrgs } from '../support/aggregator-member.js'
import { TempDirs } from '../support/db/helpers.js'
import { makeNode, type TestNode } from '../support/exchange-harness.js'
import { openRepos, type Repos } from '../support/repos.js'
import { MemoryStorage } from '../support/storage.js'
import { waitUntil } from '../support/wait.js'

/**
 * An honest sender whose pins are merely late (mining held, a slow chain): the receiver refuses its batches past
 * quotas.unpinnedBatchBytesPerOrg with 507, the sender's exchange and then its durable delivery queue retry, and once
 * the pins are read the refused batch goes through. Real mutual TLS, the node's receiver and delivery queue; the
 * chain's pin logs are handed to the receiver's pin ingest as its follower would.
 */
describe('exchange: a batch refused for the quota on batches no pin names yet is delivered once its pins arrive', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1] = registeredOrgs(2)
  const group = groupOf([org0!, org1!])
  let member: AggregatorMember
  let sender: Repos
  let nodes: TestNode[] = []
  let queue: DeliveryQueue | undefined
  const lines: string[] = []
  /** Batches the receiver's handler was given: a refusal at admission reads no body. */
  let handled = 0

  before(async () => {
    member = await AggregatorMember.open(join(await temp.make('parley-quota-receiver-'), 'db'), new MemoryStorage(), org1!, { unpinnedBatchBytes: 2 * MIN_BATCH_CHARGE_BYTES })
    await member.register([org0!, org1!], [group])
    sender = await openRepos(join(await temp.make('parley-quota-sender-'), 'db'))
    nodes = [await makeNode('org0'), await makeNode('org1')]
    const [a, b] = nodes as [TestNode, TestNode]
    a.peer = { ...a.peer, node: nodeDid(org0!.node) }
    b.batchHandler = (from, payload) => {
      handled++
      return member.receiver.handle(from, payload)
    }
    b.batchAdmission = member.receiver.admit
    a.exchange.trust([b.peer])
    b.exchange.trust([a.peer])
    await Promise.all(nodes.map((n) => n.exchange.start()))
  })
  after(async () => {
    await queue?.stop()
    await Promise.all(nodes.map((n) => n.exchange.stop()))
    await member.close()
    await sender.db.close()
    temp.cleanup()
  })

  it('the third batch waits, refused 507 naming the quota, until the first pins are read; then it is taken', async () => {
    const batches = [0, 1, 2].map((n) => privateBatch(org0!, group, [['orders']], [[n]]))
    const byId = new Map<BatchId, BatchPayload>(batches.map((b) => [b.id, b]))
    const deliveries = new DeliveriesRepo(sender.db)
    const to = nodeDid(org1!.node)
    queue = new DeliveryQueue({
      db: sender.db,
      deliveries,
      exchange: nodes[0]!.exchange,
      peerOf: (did) => (did === to ? nodes[1]!.peer : undefined),
      load: (id) => byId.get(id),
      blob: () => undefined,
      log: (l) => lines.push(l),
      retryDelayMs: () => 100,
    })
    queue.start()
    const stateOf = (b: BatchPayload) => deliveries.ofBatch(b.id)[0]?.state
    for (const b of batches) {
      await queue.enqueue(b, [to])
      await waitUntil(`batch ${b.id} delivered or retried`, () => stateOf(b) === 'done' || (deliveries.ofBatch(b.id)[0]?.attempts ?? 0) > 0)
    }
    expect(batches.map(stateOf)).to.deep.equal(['done', 'done', 'pending'])
    // The queue logs its attempt after recording it: wait for the line.
    await waitUntil('the refusal logged by the sender', () => /batch .* not delivered yet \(attempt 1\): .*507 STORAGE_FULL.*quotas\.unpinnedBatchBytesPerOrg/.test(lines.join('\n')))
    // The org had no room for any batch: refused before its body was read, so the handler never saw it.
    expect(nodes[1]!.logs.some((l) => l.includes('refused a batch from') && l.includes('quotas.unpinnedBatchBytesPerOrg'))).to.equal(true)
    expect(handled, 'the handler saw the first two only').to.equal(2)

    await member.pin(pinLogOf({ payload: batches[0]! }))
    await waitUntil('the refused batch delivered', () => stateOf(batches[2]!) === 'done', { timeoutMs: 30_000 })
    expect(member.r.batches.byIdHash(batches[2]!.id, batches[2]!.hash)?.state).to.equal('received')
    expect(handled).to.equal(3)
    expect(lines.some((l) => l.includes(`batch ${batches[2]!.id} delivered to ${to} after`))).to.equal(true)
  })
})
