import { expect } from 'chai'
import { join } from 'node:path'
import { PrivateDispatcher, type BatchDelivery } from '../../../../node/batch/private-dispatcher.js'
import { batchPayload } from '../../../../node/batch/payload.js'
import type { SealedBatch } from '../../../../node/batch/dispatcher.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { formatPin, groupHash, messageHash, nonceKey, privatePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { BatchPayload, BatchRecord, Group, Header, Message } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'

/**
 * The private dispatcher over a real database: the pins it allocates at sealing (one nonce per topic, per group and
 * author, in message order, recorded on the messages), whom it queues a batch for, and each refusal of a batch it
 * cannot pin or deliver. The delivery queue, its seam, is a recorder.
 */
describe('batch: the private dispatcher', () => {
  const temp = new TempDirs()
  let repos: Repos
  let nodes: IdentityId[]
  let group: Group
  const author = 'did:firefly:org/org0'
  const self = { org: 'org0', node: 'node0', orgDid: author, nodeDid: 'did:firefly:node/node0', key: '0x' + 'aa'.repeat(20) }
  let enqueued: { payload: BatchPayload; peers: readonly string[] }[]
  let dispatcher: PrivateDispatcher

  before(async () => {
    repos = await openRepos(join(await temp.make('parley-private-dispatcher-'), 'db'))
    ;({ nodes } = await registerMembers(repos, 3))
    const members = [0, 1, 2].map((i) => ({ identity: `did:firefly:org/org${i}`, node: nodes[i]! }))
    group = { namespace: 'default', name: 'g', members, hash: groupHash({ namespace: 'default', name: 'g', members }), created: now() }
    await repos.db.transaction((tx) => repos.groups.insert(tx, group))
  })
  after(async () => {
    await repos.db.close()
    await temp.cleanup()
  })
  beforeEach(() => {
    enqueued = []
    const delivery: BatchDelivery = { enqueue: async (payload, peers) => void enqueued.push({ payload, peers }) }
    dispatcher = new PrivateDispatcher({ ...repos, self, delivery })
  })

  function message(topics: string[], fields: Partial<Header> = {}): Message {
    const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author, key: self.key, created: now(), namespace: 'default', group: group.hash, topics, datahash: 'd'.repeat(64) as Hash, ...fields }
    return { header, hash: messageHash(header), state: 'pending', data: [] }
  }
  function record(fields: Partial<BatchRecord> = {}): BatchRecord {
    return { id: newId<BatchId>(), type: 'private', namespace: 'default', author, key: self.key, group: group.hash, created: now(), hash: 'e'.repeat(64) as Hash, manifest: '{}', txId: newId<TxId>(), state: 'sealed', local: true, ...fields }
  }
  /** Seals `messages` (stored first) in one transaction, as the assembler does. */
  async function seal(messages: Message[]): Promise<Message[]> {
    await repos.db.transaction((tx) => repos.messages.insertMany(tx, messages, true))
    return repos.db.transaction((tx) => dispatcher.seal(tx, record(), messages))
  }
  const pin = (topic: string, nonce: number) => formatPin(privatePin(topic, group.hash, author, nonce), nonce)

  it('gives each topic of each message the next nonce of its sequence, in message order, and records the pins', async () => {
    const topic = `t-${newId()}`
    const other = `u-${newId()}`
    const [a, b] = await seal([message([topic, other]), message([topic])])
    expect(a!.pins).to.deep.equal([pin(topic, 0), pin(other, 0)])
    expect(b!.pins).to.deep.equal([pin(topic, 1)])
    expect(repos.messages.get(b!.header.id)!.pins).to.deep.equal([pin(topic, 1)])
    // The next batch goes on from there: the sequence is the database's, not the dispatcher's.
    const [c] = await seal([message([topic])])
    expect(c!.pins).to.deep.equal([pin(topic, 2)])
    expect(dispatcher.contexts({ record: record(), payload: batchPayload(record(), [a!, b!], []) })).to.deep.equal([pin(topic, 0), pin(other, 0), pin(topic, 1)].map((p) => p.split(':')[0]))
  })

  it('pins neither an unpinned message nor one that holds its pins already, allocating nonces only for the others', async () => {
    const topic = `t-${newId()}`
    const unpinned = message([topic], { txtype: 'none' })
    const held = { ...message([topic]), pins: ['ab'.repeat(32) + ':0000000000000007'] }
    const fresh = message([topic])
    const sealed = await seal([unpinned, held, fresh])
    expect(sealed).to.deep.equal([unpinned, held, { ...fresh, pins: [pin(topic, 0)] }])
    expect(repos.messages.get(unpinned.header.id)!.pins).to.equal(undefined)
    const key = nonceKey(topic, group.hash, author)
    expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, key))).to.equal(1)
  })

  it('refuses to seal a private message without a group, recording no pins', async () => {
    const topic = `t-${newId()}`
    const good = message([topic])
    const stray = message([topic], { group: undefined })
    await repos.db.transaction((tx) => repos.messages.insertMany(tx, [good, stray], true))
    const err = await repos.db.transaction((tx) => dispatcher.seal(tx, record(), [good, stray])).then(() => undefined, (e: unknown) => e)
    expect(err).to.be.instanceOf(ParleyError).with.property('code', 'INTERNAL')
    expect((err as Error).message).to.equal(`private message ${stray.header.id} has no group`)
    expect(repos.messages.get(good.header.id)!.pins).to.equal(undefined)
  })

  it('queues a batch for the nodes of the group other than its own, and answers no payload reference', async () => {
    const [m] = await seal([message([`t-${newId()}`])])
    const batch: SealedBatch = { record: record(), payload: batchPayload(record(), [m!], []) }
    expect(await dispatcher.prepare(batch, new AbortController().signal)).to.equal('')
    expect(enqueued.map((e) => [e.payload.id, [...e.peers].sort()])).to.deep.equal([[batch.payload.id, ['did:firefly:node/node1', 'did:firefly:node/node2']]])
    // A batch record without its group is delivered to the group its messages name.
    const { group: _, ...ungrouped } = record()
    await dispatcher.prepare({ record: ungrouped, payload: batch.payload }, new AbortController().signal)
    expect(enqueued).to.have.length(2)
  })

  it('refuses to prepare a batch once stopped, for a group not stored here, or for a member node not registered', async () => {
    const [m] = await seal([message([`t-${newId()}`])])
    const batch: SealedBatch = { record: record(), payload: batchPayload(record(), [m!], []) }
    const aborted = new AbortController()
    aborted.abort(new Error('stopping'))
    await expectRefusal(dispatcher.prepare(batch, aborted.signal), undefined, 'stopping')

    const unknown = 'f'.repeat(64) as Hash
    const elsewhere = record({ group: unknown })
    await expectRefusal(dispatcher.prepare({ record: elsewhere, payload: batch.payload }, new AbortController().signal), 'INTERNAL', `private batch ${elsewhere.id}: group ${unknown} is not stored here`)

    const { group: _, ...ungrouped } = record()
    await expectRefusal(dispatcher.prepare({ record: ungrouped, payload: batchPayload(ungrouped, [], []) }, new AbortController().signal), 'INTERNAL', `private batch ${ungrouped.id}: group (none) is not stored here`)

    const stranger = newId<IdentityId>()
    const members = [{ identity: author, node: nodes[0]! }, { identity: 'did:firefly:org/org9', node: stranger }]
    const odd: Group = { namespace: 'default', name: 'odd', members, hash: groupHash({ namespace: 'default', name: 'odd', members }), created: now() }
    await repos.db.transaction((tx) => repos.groups.insert(tx, odd))
    await expectRefusal(dispatcher.prepare({ record: record({ group: odd.hash }), payload: batch.payload }, new AbortController().signal), 'UNAVAILABLE', `group ${odd.hash}: node ${stranger} is not registered here`)
    expect(enqueued).to.deep.equal([])
  })

  it('refuses the contexts of an unpinned message, or of one sealed without its pins', () => {
    const unpinned = message(['t'], { txtype: 'none' })
    const of = (m: Message) => () => dispatcher.contexts({ record: record(), payload: batchPayload(record(), [m], []) })
    expect(of(unpinned)).to.throw(ParleyError, `unpinned message ${unpinned.header.id} cannot be pinned`)
    const bare = message(['t', 'u'])
    expect(of(bare)).to.throw(ParleyError, `private message ${bare.header.id} was sealed without its pins`)
    const short = { ...bare, pins: [pin('t', 0)] }
    expect(of(short)).to.throw(ParleyError, `private message ${bare.header.id} was sealed without its pins`)
  })

  /** Expects `p` to reject with `code` (any error when undefined) and a message ending in `text`. */
  async function expectRefusal(p: Promise<unknown>, code: string | undefined, text: string): Promise<void> {
    const err = await p.then(() => undefined, (e: unknown) => e)
    expect(err, 'refused').to.be.instanceOf(Error)
    if (code !== undefined) expect(err).to.have.property('code', code)
    expect((err as Error).message.endsWith(text), (err as Error).message).to.equal(true)
  }
})
