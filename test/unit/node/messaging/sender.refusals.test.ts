import { expect } from 'chai'
import { join } from 'node:path'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'
import { localIdentity, type Data, type Group, type Message } from '../../../../node/model/index.js'
import { newId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { now } from '../../../../node/core/time.js'
import { HTTP_STATUS } from '../../../../node/api/errors.js'
import type { GroupResolver } from '../../../../node/identity/group-resolver.js'

const KEY = '0x' + 'aa'.repeat(20)
const self = localIdentity('org0', 'node0', KEY)
const BLOB = 'b1'.repeat(32) as Hash

/** What a send is refused with, and that nothing was accepted for batching. */
async function refusal(send: Promise<Message>): Promise<{ status: number; message: string }> {
  try {
    await send
  } catch (e) {
    expect(e).to.be.instanceOf(ParleyError)
    const err = e as ParleyError
    return { status: HTTP_STATUS[err.code], message: err.message }
  }
  throw new Error('expected the send to be refused')
}

/** The sender over a real database, with the batch manager replaced by a list; what a client may not ask of it. */
describe('message sender: refusals', () => {
  const temp = new TempDirs()
  let r: Repos
  let accepted: Message[]
  let sender: MessageSender
  const group: Group = { hash: 'ab'.repeat(32) as Hash, namespace: 'default', name: '', members: [], created: now() }

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-sender-'), 'db'))
    await registerOrg(r.db, r.identities, 'org0', KEY)
    accepted = []
    sender = make()
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  const make = (extra: Partial<ConstructorParameters<typeof MessageSender>[0]> = {}): MessageSender =>
    new MessageSender({
      ...r,
      self,
      sink: { accepted: (m) => accepted.push(m) },
      validator: new DataValidatorImpl(() => undefined),
      confirmations: new Confirmations(),
      ...extra,
    })
  const input = (body: unknown) => parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup: true })
  const withPrivate = (): MessageSender => make({ privateGroups: { resolver: { resolve: () => ({ group, isNew: false }) } as unknown as GroupResolver, repo: r.groups } })
  const stored = async (over: Partial<Data>): Promise<Data> => {
    const d = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: null, blobHash: BLOB }), created: now(), value: null, ...over } as Data
    await r.db.transaction((tx) => r.data.insert(tx, d, true))
    return d
  }

  it('refuses to sign with another key or for another author, and takes its own org by name or DID', async () => {
    expect(await refusal(sender.broadcast('default', input({ header: { key: '0x' + 'bb'.repeat(20) }, data: [{ value: 1 }] })))).to.deep.equal({
      status: 400,
      message: `header.key 0x${'bb'.repeat(20)} is not a key this node can sign with (it signs with ${KEY})`,
    })
    expect(await refusal(sender.broadcast('default', input({ header: { author: 'org1' }, data: [{ value: 1 }] })))).to.deep.equal({
      status: 400,
      message: `author "org1" is not an identity this node can sign for (it signs for ${self.orgDid})`,
    })
    expect(accepted).to.deep.equal([])
    expect((await sender.broadcast('default', input({ header: { author: 'org0', key: KEY.toUpperCase().replace('0X', '0x') }, data: [{ value: 1 }] }))).header.author).to.equal(self.orgDid)
    expect((await sender.broadcast('default', input({ header: { author: self.orgDid }, data: [{ value: 1 }] }))).header.author).to.equal(self.orgDid)
  })

  it('refuses an unpinned broadcast, and unpinned or private sends on a node without them', async () => {
    expect(await refusal(sender.broadcast('default', input({ header: { txtype: 'none' }, data: [{ value: 1 }] })))).to.deep.equal({ status: 400, message: 'txtype none (unpinned) is only for private sends' })
    expect(await refusal(sender.private('default', input({ group: { members: [{ identity: 'org1' }] }, data: [{ value: 1 }] })))).to.deep.equal({ status: 503, message: 'private sends are not available on this node' })
    expect(await refusal(withPrivate().private('default', input({ header: { txtype: 'none' }, group: { members: [{ identity: 'org1' }] }, data: [{ value: 1 }] })))).to.deep.equal({
      status: 503,
      message: 'unpinned sends are not available on this node',
    })
    expect(accepted).to.deep.equal([])
  })

  it('refuses a private send that names no group, or names it twice', async () => {
    const s = withPrivate()
    expect(await refusal(s.private('default', input({ data: [{ value: 1 }] })))).to.deep.equal({ status: 400, message: 'group is required: {members: [{identity}]} or a group hash in header.group' })
    expect(await refusal(s.private('default', input({ header: { group: group.hash }, group: { members: [{ identity: 'org1' }] }, data: [{ value: 1 }] })))).to.deep.equal({
      status: 400,
      message: 'give the group once: either group or header.group',
    })
  })

  it('refuses data whose blob it cannot send: not held here, or published and known bad', async () => {
    const unheld = await stored({ blob: { hash: BLOB, size: 3, name: '' } })
    expect(await refusal(sender.broadcast('default', input({ data: [{ id: unheld.id }] })))).to.deep.equal({
      status: 400,
      message: `data[0]: this node does not hold the blob ${BLOB} of data ${unheld.id}`,
    })
    const published = await stored({ blob: { hash: BLOB, size: 3, name: '', public: 'QmBad' } })
    await r.db.transaction((tx) => r.refs.settle(tx, { hash: BLOB, size: 3, public: "QmBad" }, { ok: false, reason: "the published content does not match" }, now()))
    expect(await refusal(sender.broadcast('default', input({ data: [{ id: published.id }] })))).to.deep.equal({
      status: 400,
      message: `data[0]: the blob of data ${published.id} cannot be obtained: the published content does not match`,
    })
    // Published, not known bad: a broadcast carries it by its reference, though the blob is not held here...
    const fine = await stored({ blob: { hash: BLOB, size: 4, name: '', public: 'QmGood' } })
    expect((await sender.broadcast('default', input({ data: [{ id: fine.id }] }))).data).to.deep.equal([{ id: fine.id, hash: fine.hash }])
    // ...but a private message carries only blobs this node can send.
    expect(await refusal(withPrivate().private('default', input({ header: { group: group.hash }, data: [{ id: fine.id }] })))).to.deep.equal({
      status: 400,
      message: `data[0]: this node does not hold the blob ${BLOB}, and a private message carries only blobs it can send`,
    })
    expect(accepted).to.have.length(1)
  })

  it('refuses a second send with an idempotency key already used, naming the message it made', async () => {
    const first = await sender.broadcast('default', input({ data: [{ value: 1 }], idempotencyKey: 'order-1' }))
    expect(await refusal(sender.broadcast('default', input({ data: [{ value: 2 }], idempotencyKey: 'order-1' })))).to.deep.equal({
      status: 409,
      message: `the idempotency key was already used for message ${first.header.id}`,
    })
    expect(accepted.map((m) => m.header.id)).to.deep.equal([first.header.id])
  })
})
