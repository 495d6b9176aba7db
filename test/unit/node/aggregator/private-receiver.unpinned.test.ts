import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'
import { BatchManager } from '../../../../node/batch/manager.js'
import { PrivateDispatcher } from '../../../../node/batch/private-dispatcher.js'
import type { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import { PrivateReceiver } from '../../../../node/aggregator/private-receiver.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { DataValidatorImpl, type DataValidator } from '../../../../node/data/validator.js'
import { datatypeLookup } from '../../../../node/data/schema-cache.js'
import { GroupResolver, sealGroup } from '../../../../node/identity/group-resolver.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { newId, type BatchId, type DataId, type DatatypeId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Chain, PinBatchRequest } from '../../../../node/chain/types.js'
import { pinSubmission } from '../../../../node/chain/pin-submission.js'
import type { SharedStorage } from '../../../../node/storage/shared-storage.js'
import { localIdentity, type BatchPayload, type Data, type Group, type Header, type Message, type NodeEvent } from '../../../../node/model/index.js'
import type { Peer } from '../../../../node/exchange/index.js'

const NS = 'default'
const KEY0 = '0x00000000000000000000000000000000000000a0'
const self0 = localIdentity('org0', 'node0', KEY0)
const self1 = localIdentity('org1', 'node1', '0x00000000000000000000000000000000000000a1')
const from0: Peer = { node: self0.nodeDid, org: 'org0', endpoint: 'https://127.0.0.1:1', cert: '' }

function unpinnedMessage(group: Hash, value = '"v"', datatype?: { name: string; version: string }): { message: Message; data: Data } {
  const d: Data = { id: newId<DataId>(), validator: 'json', namespace: NS, hash: dataHash({ valueRaw: value }), created: now(), value, ...(datatype ? { datatype } : {}) }
  const header: Header = {
    id: newId<MessageId>(),
    type: 'private',
    txtype: 'none',
    author: self0.orgDid,
    key: KEY0,
    created: now(),
    namespace: NS,
    group,
    topics: ['t'],
    datahash: dataRefsHash([{ id: d.id, hash: d.hash }]),
  }
  return { message: { header, hash: messageHash(header), state: 'ready', data: [{ id: d.id, hash: d.hash }] }, data: d }
}

function unpinnedBatch(items: { message: Message; data: Data }[], group: Hash): BatchPayload {
  const id = newId<BatchId>()
  const tx = { type: 'unpinned' as const, id: newId<TxId>() }
  const messages = items.map((i) => ({ header: i.message.header, hash: i.message.hash, data: i.message.data }))
  const data = items.map((i) => i.data)
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'private', namespace: NS, node: self0.nodeDid, author: self0.orgDid, key: KEY0, group, created: now(), hash, tx, messages, data }
}

async function until(what: string, cond: () => boolean, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

describe('unpinned private messages', () => {
  const temp = new TempDirs()
  let r: Repos
  let group: Group

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-unpinned-'), 'db'))
    const nodes = (await registerMembers(r, 3)).nodes
    const sealed = sealGroup(NS, '', [
      { identity: self0.orgDid, node: nodes[0]! },
      { identity: self1.orgDid, node: nodes[1]! },
    ])
    group = { hash: sealed.hash, namespace: NS, name: '', members: sealed.members, created: now() }
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  /** A batch manager for org0 with a private dispatcher, a batch timeout far away, recording what it publishes. */
  function privateBatchManager(o: { chain: Chain; size: number; published: NodeEvent[]; delivered?: BatchPayload[] }): BatchManager {
    return new BatchManager({
      ...r,
      published: (written) => o.published.push(...written),
      storage: {} as SharedStorage,
      chain: o.chain,
      self: self0,
      config: { size: o.size, payloadLimit: 800_000, timeoutMs: 1_000_000_000 },
      blobs: {} as BlobPublisher,
      log: () => {},
      dispatchers: [new PrivateDispatcher({ ...r, self: self0, delivery: { enqueue: async (p) => void o.delivered?.push(p) } })],
    })
  }

  it('the batch manager seals an unpinned message at once, apart from pinned ones, delivers it without pins and never submits a pin', async () => {
    await r.db.transaction((tx) => r.groups.insert(tx, group))
    const pinCalls: PinBatchRequest[] = []
    const published: NodeEvent[] = []
    const chain = { submitPinBatch: (req: PinBatchRequest) => (pinCalls.push(req), undefined) } as unknown as Chain
    const delivered: BatchPayload[] = []
    // A batch timeout far away: only an unpinned message can be sealed within the test.
    const manager = privateBatchManager({ chain, size: 200, published, delivered })
    const pinned = { ...unpinnedMessage(group.hash), pinned: true }
    pinned.message = { ...pinned.message, header: { ...pinned.message.header, txtype: 'batch_pin' } }
    pinned.message.hash = messageHash(pinned.message.header)
    const u = unpinnedMessage(group.hash)
    await r.db.transaction((tx) => {
      r.data.insertMany(tx, [pinned.data, u.data], true)
      r.messages.insertMany(tx, [pinned.message, u.message], true)
    })
    manager.accepted(pinned.message, [pinned.data], 1000)
    manager.accepted(u.message, [u.data], 1000)
    await until('the unpinned batch to be sent', () => r.messages.get(u.message.header.id)?.batch !== undefined && r.batches.get(r.messages.get(u.message.header.id)!.batch!)?.state === 'sent')
    await manager.stop()
    expect(delivered).to.have.length(1)
    expect(delivered[0]!.tx.type).to.equal('unpinned')
    expect(delivered[0]!.messages.map((m) => m.header.id)).to.deep.equal([u.message.header.id])
    expect(delivered[0]!.messages[0]!.pins).to.equal(undefined)
    expect(r.messages.get(u.message.header.id)!.pins).to.equal(undefined)
    // The pinned message waits for its batch timeout, in a batch of its own kind; nothing went to the chain.
    expect(r.messages.get(pinned.message.header.id)!.batch).to.equal(undefined)
    expect(pinCalls).to.have.length(0)
    // No transaction to submit: sealing the unpinned batch wrote no transaction_submitted, and published nothing.
    expect(r.events.list({ namespace: NS, type: 'transaction_submitted', limit: 10, skip: 0 })).to.deep.equal([])
    expect(published).to.deep.equal([])
  })

  it('the sender confirms its own unpinned message at once, its event naming the message by id and hash', async () => {
    await r.db.transaction((tx) => r.groups.insert(tx, group))
    const published: NodeEvent[] = []
    const sender = new MessageSender({
      ...r,
      self: self0,
      sink: { accepted: () => {} },
      validator: new DataValidatorImpl(() => undefined),
      confirmations: new Confirmations(),
      unpinned: { events: r.events, published: (w) => published.push(...w) },
      privateGroups: { resolver: new GroupResolver({ identities: r.identities, groups: r.groups, self: self0 }), repo: r.groups },
    })
    const body = { header: { txtype: 'none', group: group.hash }, data: [{ value: 1 }] }
    const m = await sender.private(NS, parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup: true }))
    expect(m.state).to.equal('confirmed')
    expect(published.map((e) => [e.type, e.reference, e.referenceHash])).to.deep.equal([['message_confirmed', m.header.id, m.hash]])
    expect(r.events.list({ namespace: NS, reference: m.header.id, limit: 10, skip: 0 }).map((e) => e.referenceHash)).to.deep.equal([m.hash])
  })

  it('a pinned private batch, by contrast, writes its transaction_submitted when sealed and publishes it', async () => {
    await r.db.transaction((tx) => r.groups.insert(tx, group))
    const published: NodeEvent[] = []
    const chain = { submitPinBatch: () => pinSubmission(Promise.resolve('sent'), Promise.resolve({ txHash: '0x' + '11'.repeat(32), blockNumber: 1 })) } as unknown as Chain
    const manager = privateBatchManager({ chain, size: 1, published })
    const p = unpinnedMessage(group.hash)
    p.message = { ...p.message, header: { ...p.message.header, txtype: 'batch_pin' } }
    p.message.hash = messageHash(p.message.header)
    await r.db.transaction((tx) => {
      r.data.insertMany(tx, [p.data], true)
      r.messages.insertMany(tx, [p.message], true)
    })
    manager.accepted(p.message, [p.data], 1000)
    await until('the private batch pinned', () => {
      const b = r.messages.get(p.message.header.id)?.batch
      return b !== undefined && r.batches.get(b)?.state === 'pinned'
    })
    await manager.stop()
    const b = r.batches.get(r.messages.get(p.message.header.id)!.batch!)!
    const submitted = r.events.list({ namespace: NS, type: 'transaction_submitted', limit: 10, skip: 0 })
    expect(submitted.map((e) => [e.reference, e.tx, e.topic])).to.deep.equal([[b.txId, b.txId, 'batch_pin']])
    expect(published.map((e) => e.id)).to.deep.equal(submitted.map((e) => e.id))
  })

  describe('a recipient', () => {
    let written: NodeEvent[]
    let receiver: PrivateReceiver
    beforeEach(async () => {
      const schema = '{"type":"object","required":["size"]}'
      await r.db.transaction((tx) =>
        r.datatypes.insert(tx, { id: newId<DatatypeId>(), message: newId<MessageId>(), validator: 'json', namespace: NS, name: 'widget', version: '1', hash: dataHash({ valueRaw: schema }), created: now(), value: schema, orderedAt: 0 }),
      )
      written = []
      const validator = new DataValidatorImpl(datatypeLookup(r.datatypes))
      receiver = new PrivateReceiver({ ...r, self: self1, arrived: () => expect.fail('no pins to walk for an unpinned batch'), unpinned: { blobs: r.blobs, validator, events: r.events, published: (w) => written.push(...w) } })
    })

    it('answers a resend of an unpinned batch only once the commit that stored it is durable', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const m = unpinnedMessage(group.hash)
      const b = unpinnedBatch([m], group.hash)
      let durableAtFirst = -1
      const first = receiver.handle(from0, b).then(() => (durableAtFirst = r.db.stats().durableSeq))
      // The resend comes once the first delivery has stored the batch, before its commit is written.
      while (r.messages.get(m.message.header.id) === undefined) await new Promise((resolve) => setImmediate(resolve))
      let durableAtResend = -1
      const resend = receiver.handle(from0, b).then(() => (durableAtResend = r.db.stats().durableSeq))
      await Promise.all([first, resend])
      expect(durableAtResend).to.be.at.least(durableAtFirst)
      expect(written).to.have.length(1)
    })

    it('confirms each message of an unpinned batch on arrival, and rejects one whose data fails its datatype', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const good = unpinnedMessage(group.hash)
      const bad = unpinnedMessage(group.hash, '{"a":1}', { name: 'widget', version: '1' })
      const b = unpinnedBatch([good, bad], group.hash)
      await receiver.handle(from0, b)
      expect(r.messages.get(good.message.header.id)!.state).to.equal('confirmed')
      expect(r.messages.get(bad.message.header.id)!.state).to.equal('rejected')
      expect(written.map((e) => [e.type, e.reference])).to.deep.equal([
        ['message_confirmed', good.message.header.id],
        ['message_rejected', bad.message.header.id],
      ])
      // The same batch again changes nothing.
      await receiver.handle(from0, b)
      expect(written).to.have.length(2)
      // A datatype not known here yet (its definition travels pinned, and may still be on its way): held back, not
      // rejected, so this member does not refuse what the sender accepted.
      const early = unpinnedMessage(group.hash, '{"a":1}', { name: 'later', version: '1' })
      let code = ''
      await receiver.handle(from0, unpinnedBatch([early], group.hash)).catch((err: unknown) => (code = isParleyError(err, 'UNAVAILABLE') ? 'UNAVAILABLE' : String(err)))
      expect(code).to.equal('UNAVAILABLE')
      expect(r.messages.get(early.message.header.id)).to.equal(undefined)
    })

    it('holds an unpinned batch back (UNAVAILABLE, sent again) while its group is not known here, and refuses one carrying pins or mixing txtypes', async () => {
      const u = unpinnedMessage(group.hash)
      let code = ''
      await receiver.handle(from0, unpinnedBatch([u], group.hash)).catch((err: unknown) => (code = isParleyError(err, 'UNAVAILABLE') ? 'UNAVAILABLE' : String(err)))
      expect(code).to.equal('UNAVAILABLE')
      expect(r.messages.get(u.message.header.id)).to.equal(undefined)
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const withPins = unpinnedBatch([u], group.hash)
      withPins.messages[0]!.pins = ['00:0000000000000000']
      code = ''
      await receiver.handle(from0, withPins).catch((err: unknown) => (code = isParleyError(err, 'BAD_PEER_DATA') ? 'BAD_PEER_DATA' : String(err)))
      expect(code).to.equal('BAD_PEER_DATA')
      const pinnedTx = { ...unpinnedBatch([u], group.hash) }
      pinnedTx.tx = { type: 'batch_pin', id: pinnedTx.tx.id }
      pinnedTx.hash = sealManifest(pinnedTx).hash
      code = ''
      await receiver.handle(from0, pinnedTx).catch((err: unknown) => (code = isParleyError(err, 'BAD_PEER_DATA') ? 'BAD_PEER_DATA' : String(err)))
      expect(code).to.equal('BAD_PEER_DATA')
      await receiver.handle(from0, unpinnedBatch([u], group.hash))
      expect(r.messages.get(u.message.header.id)!.state).to.equal('confirmed')
    })

    it('leaves a message decided already as it is when its author sends it again in another batch: no second event, its batch unchanged', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const good = unpinnedMessage(group.hash)
      const bad = unpinnedMessage(group.hash, '{"a":1}', { name: 'widget', version: '1' })
      await receiver.handle(from0, unpinnedBatch([good, bad], group.hash))
      const decided = () => [good, bad].map((i) => r.messages.get(i.message.header.id)!)
      const before = decided()
      expect(before.map((m) => m.state)).to.deep.equal(['confirmed', 'rejected'])
      // Both again in a new batch, beside a new message: only the new one is decided, in the new batch.
      const fresh = unpinnedMessage(group.hash)
      const again = unpinnedBatch([good, bad, fresh], group.hash)
      await receiver.handle(from0, again)
      expect(decided()).to.deep.equal(before)
      expect([r.messages.get(fresh.message.header.id)!.state, r.messages.get(fresh.message.header.id)!.batch]).to.deep.equal(['confirmed', again.id])
      // And a batch of nothing but decided messages decides nothing.
      await receiver.handle(from0, unpinnedBatch([bad, good], group.hash))
      expect(decided()).to.deep.equal(before)
      expect(written.map((e) => [e.type, e.reference])).to.deep.equal([
        ['message_confirmed', good.message.header.id],
        ['message_rejected', bad.message.header.id],
        ['message_confirmed', fresh.message.header.id],
      ])
      // The log holds what was published, no more.
      const logged = ['message_confirmed', 'message_rejected'].flatMap((type) => r.events.list({ namespace: NS, type, limit: 10, skip: 0 }))
      expect(logged).to.have.length(3)
    })

    it('stores an unpinned message under an id held with other content, and decides it on its own', async () => {
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const first = unpinnedMessage(group.hash)
      await receiver.handle(from0, unpinnedBatch([first], group.hash))
      // The same id, other content: nothing orders unpinned messages among members, so the one held here changes nothing.
      const reused = unpinnedMessage(group.hash, '"other"')
      const header = { ...reused.message.header, id: first.message.header.id }
      reused.message = { ...reused.message, header, hash: messageHash(header) }
      await receiver.handle(from0, unpinnedBatch([reused], group.hash))
      const rows = r.messages.allWithId(first.message.header.id)
      expect(rows.map((m) => [m.hash, m.state])).to.deep.equal([
        [first.message.hash, 'confirmed'],
        [reused.message.hash, 'confirmed'],
      ])
      expect(written.map((e) => [e.type, e.referenceHash])).to.deep.equal([
        ['message_confirmed', first.message.hash],
        ['message_confirmed', reused.message.hash],
      ])
      // Not the first stored, which differs between members: the smaller hash, the same everywhere.
      const smaller = [first.message.hash, reused.message.hash].sort()[0]
      expect(r.messages.get(first.message.header.id)!.hash, 'of two unpinned confirmed, the smaller hash').to.equal(smaller)
    })

    it('checks an unpinned batch in full (author, hashes, group, blobs) before validating any of its data', async () => {
      let validations = 0
      const validator = new DataValidatorImpl(datatypeLookup(r.datatypes))
      const counting: DataValidator = {
        validateAll: (ns, items) => (validations++, validator.validateAll(ns, items)),
        validateOnReceipt: (...a) => validator.validateOnReceipt(...a),
        prefetch: (ns, items) => validator.prefetch(ns, items),
        requireDatatype: (...a) => validator.requireDatatype(...a),
        stop: () => validator.stop(),
      }
      receiver = new PrivateReceiver({ ...r, self: self1, arrived: () => expect.fail('no pins to walk for an unpinned batch'), unpinned: { blobs: r.blobs, validator: counting, events: r.events, published: (w) => written.push(...w) } })
      const codeOf = (p: Promise<void>): Promise<string> => p.then(() => 'stored', (err: unknown) => (isParleyError(err) ? err.code : String(err)))
      const widget = () => unpinnedMessage(group.hash, '{"size":1}', { name: 'widget', version: '1' })
      // The group is not known here yet: sent again later, nothing validated meanwhile.
      expect(await codeOf(receiver.handle(from0, unpinnedBatch([widget()], group.hash)))).to.equal('UNAVAILABLE')
      await r.db.transaction((tx) => r.groups.insert(tx, group))
      const tampered = unpinnedBatch([widget()], group.hash)
      tampered.data = [{ ...tampered.data[0]!, value: '{"size":2}' }]
      expect(await codeOf(receiver.handle(from0, tampered))).to.equal('BAD_PEER_DATA')
      // Sent by a node of another org than its author's.
      const from2: Peer = { ...from0, org: 'org2', node: 'did:firefly:node/node2' }
      expect(await codeOf(receiver.handle(from2, unpinnedBatch([widget()], group.hash)))).to.equal('BAD_PEER_DATA')
      // A blob it refers to is not here yet.
      const withBlob = widget()
      withBlob.data.blob = { hash: 'c'.repeat(64) as Hash, size: 1, name: '' }
      withBlob.data.hash = dataHash({ valueRaw: withBlob.data.value, blobHash: withBlob.data.blob.hash })
      withBlob.message.data = [{ id: withBlob.data.id, hash: withBlob.data.hash }]
      withBlob.message.header.datahash = dataRefsHash(withBlob.message.data)
      withBlob.message.hash = messageHash(withBlob.message.header)
      expect(await codeOf(receiver.handle(from0, unpinnedBatch([withBlob], group.hash)))).to.equal('UNAVAILABLE')
      expect(validations).to.equal(0)
      // A batch that passes every check has its data validated, and its message confirmed.
      const ok = widget()
      const b = unpinnedBatch([ok], group.hash)
      expect(await codeOf(receiver.handle(from0, b))).to.equal('stored')
      expect([validations, r.messages.get(ok.message.header.id)!.state]).to.deep.equal([1, 'confirmed'])
      // Held already: not validated again.
      expect(await codeOf(receiver.handle(from0, b))).to.equal('stored')
      expect(validations).to.equal(1)
    })
  })
})
