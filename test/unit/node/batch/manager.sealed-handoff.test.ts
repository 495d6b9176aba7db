import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RecentBatches } from '../../../../node/aggregator/recent-batches.js'
import { BatchManager } from '../../../../node/batch/manager.js'
import { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import type { Chain, ChainStatus, PinBatchRequest, PinSubmission } from '../../../../node/chain/types.js'
import { pinSubmission } from '../../../../node/chain/pin-submission.js'
import { newId, type DataId, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { localIdentity, type Data, type Header, type Message } from '../../../../node/model/index.js'
import { PrivateDispatcher } from '../../../../node/batch/private-dispatcher.js'
import { sealGroup } from '../../../../node/identity/group-resolver.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { now } from '../../../../node/core/time.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'
import { refKey } from '../../../../node/db/repos/ref-key.js'
import { MemoryStorage } from '../../../support/storage.js'

const KEY = '0x' + 'aa'.repeat(20)

/** A chain that takes every pin and mines it at once. */
class InstantChain implements Chain {
  private mined = 0
  start(): void {}
  submitPinBatch(_req: PinBatchRequest): PinSubmission {
    this.mined++
    const txHash = '0x' + this.mined.toString(16).padStart(64, '0')
    return pinSubmission(Promise.resolve('sent'), Promise.resolve({ txHash, blockNumber: this.mined }))
  }
  status(): ChainStatus {
    return { connected: true, rpc: 'fake', contract: 'fake', lastProcessedBlock: this.mined }
  }
  async stop(): Promise<void> {}
}

/** Deep equality with key order: what a held object turns into on the wire must be what a read would give. */
function sameText(a: unknown, b: unknown): void {
  expect(a, 'held').to.not.equal(undefined)
  expect(JSON.stringify(a)).to.equal(JSON.stringify(b))
}

async function until(what: string, cond: () => boolean, limitMs = 30_000): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/**
 * The sender hands each batch it seals to the aggregator's holder, which then serves the pass that confirms it: its
 * messages and data must be exactly what reading their rows back gives (the settled-message cache serves them as JSON).
 */
describe('sealed batches handed to the aggregator', () => {
  let dir: string
  let r: Repos
  let manager: BatchManager
  let recent: RecentBatches
  let nodes: IdentityId[]

  const self = localIdentity('org0', 'node0', KEY)

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-sealed-'))
    r = await openRepos(join(dir, 'db'))
    // org0 (this member, whose key signs) and org1, each with a node: the members of a private group.
    const members = await registerMembers(r, 2)
    await r.db.transaction((tx) => r.identities.insertVerifier(tx, { identity: members.orgs[0]!, type: 'ethereum_address', value: KEY, created: now() }))
    nodes = members.nodes
    recent = new RecentBatches()
    const blobStore = await BlobStore.open(join(dir, 'blobs'))
    const storage = new MemoryStorage()
    manager = new BatchManager({
      ...r,
      published: () => {},
      storage,
      chain: new InstantChain(),
      self: localIdentity('org0', 'node0', KEY),
      config: { size: 4, timeoutMs: 60_000, payloadLimit: 1_000_000_000 },
      blobs: new BlobPublisher({ db: r.db, data: r.data, refs: r.refs, blobStore, storage }),
      log: () => {},
      dispatchers: [new PrivateDispatcher({ messages: r.messages, nonces: r.nonces, groups: r.groups, identities: r.identities, self, delivery: { enqueue: async () => {} } })],
      recent,
    })
    manager.start()
  })
  afterEach(async () => {
    await manager.stop()
    await r.db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  function sender(): MessageSender {
    return new MessageSender({
      ...r,
      self: localIdentity('org0', 'node0', KEY),
      sink: manager,
      validator: new DataValidatorImpl(() => undefined),
      confirmations: new Confirmations(),
    })
  }

  const broadcast = (s: MessageSender, body: unknown): Promise<Message> =>
    s.broadcast('default', parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup: false }))

  it('holds what the seal wrote, key order included, for every shape of message and data a send makes', async () => {
    const s = sender()
    const first = await broadcast(s, { data: [{ value: { n: 1 } }] })
    const sent = [
      first,
      await broadcast(s, { header: { topics: ['a', 'b'], tag: 'tag-1', cid: newId<MessageId>() }, idempotencyKey: 'idem-1', data: [{ value: 'text <&> \u00e9 \u{1f600}' }, { value: [1, { x: null }] }] }),
      // Data referred to by id: read from its row when sent, and in two messages of one batch.
      await broadcast(s, { data: [{ id: first.data[0]!.id }, { value: 42 }] }),
      await broadcast(s, { header: { topics: [] }, data: [{ value: { deep: { list: [true, false] } } }] }),
    ]
    await until('the batch sealed', () => r.messages.get(sent[0]!.header.id)?.batch !== undefined)
    const batch = r.batches.get(r.messages.get(sent[0]!.header.id)!.batch!)!
    const held = recent.take(batch.id, batch.hash, batch.manifest)
    expect(held, 'the sealed batch is held').to.not.equal(undefined)
    const ids = sent.map((m) => m.header.id)
    expect(held!.manifest.entries.map((e) => e.id)).to.deep.equal(ids)
    const read = r.messages.getMany(ids)
    for (const id of ids) sameText(held!.messages.get(id), read.get(id))
    const dataRefs = sent.flatMap((m) => m.data)
    expect([...held!.data.keys()].sort()).to.deep.equal([...new Set(dataRefs.map(refKey))].sort())
    const readData = r.data.byRefs(dataRefs)
    for (const d of dataRefs) sameText(held!.data.get(refKey(d)), readData.get(refKey(d)))
  })

  it('holds a private batch with the pins its seal allocated, as their rows read back', async () => {
    const sealed = sealGroup('default', '', [
      { identity: self.orgDid, node: nodes[0]! },
      { identity: 'did:firefly:org/org1', node: nodes[1]! },
    ])
    await r.db.transaction((tx) => r.groups.insert(tx, { hash: sealed.hash, namespace: 'default', name: '', members: sealed.members, created: now() }))
    // As the sender stores a private message: ready, no pins yet (the seal allocates them).
    const items = [['a', 'b'], ['a'], ['c'], ['b', 'a', 'c']].map((topics, i) => {
      const value = JSON.stringify({ i })
      const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value }
      const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author: self.orgDid, key: KEY, created: now(), namespace: 'default', group: sealed.hash, topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
      const message: Message = { header, hash: messageHash(header), state: 'ready', data: [{ id: d.id, hash: d.hash }] }
      return { message, data: d }
    })
    await r.db.transaction((tx) => {
      r.data.insertMany(tx, items.map((x) => x.data), true)
      r.messages.insertMany(tx, items.map((x) => x.message), true)
    })
    for (const x of items) manager.accepted(x.message, [x.data], 1000)
    const first = items[0]!.message.header.id
    await until('the batch sealed', () => r.messages.get(first)?.batch !== undefined)
    const batch = r.batches.get(r.messages.get(first)!.batch!)!
    const held = recent.take(batch.id, batch.hash, batch.manifest)
    expect(held, 'the sealed batch is held').to.not.equal(undefined)
    const ids = items.map((x) => x.message.header.id)
    const read = r.messages.getMany(ids)
    expect(read.get(first)!.pins).to.have.length(2)
    for (const id of ids) sameText(held!.messages.get(id), read.get(id))
    const readData = r.data.byRefs(items.map((x) => x.data))
    for (const x of items) sameText(held!.data.get(refKey(x.data)), readData.get(refKey(x.data)))
  })
})
