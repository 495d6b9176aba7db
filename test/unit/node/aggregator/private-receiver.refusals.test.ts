import { expect } from 'chai'
import { join } from 'node:path'
import { sealManifest } from '../../../../node/batch/verify.js'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { formatPin, messageHash, privatePin } from '../../../../node/core/hashes.js'
import type { Hash } from '../../../../node/core/ids.js'
import { groupinitFor, type Groupinit } from '../../../../node/identity/group-resolver.js'
import type { Peer } from '../../../../node/exchange/index.js'
import { localIdentity, nodeDid, orgDid, type BatchPayload, type Group, type Header } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, groupOf, peerOf, privateBatch, registeredOrgs, type RegisteredOrg } from '../../../support/aggregator-member.js'

/**
 * Every refusal of a private batch delivered peer to peer, each reached with every check before it passing (hashes
 * recomputed over what is altered, as a lying peer would): BAD_PEER_DATA for what the batch can never be, UNAVAILABLE
 * for what this member cannot know yet (the peer sends it again), each with its message, and nothing of it stored.
 */
describe('private receiver: what a delivered batch is refused for', () => {
  const temp = new TempDirs()
  const [org0, org1, org2, org3] = registeredOrgs(4)
  const group = groupOf([org0!, org1!, org2!])
  const open: AggregatorMember[] = []
  afterEach(async () => {
    for (const m of open.splice(0)) await m.close()
  })
  after(() => temp.cleanup())

  /** org1's member (or `self`'s), with the four orgs registered and `groups` stored. */
  async function member(opts: { self?: RegisteredOrg; groups?: Group[]; unpinned?: boolean; register?: RegisteredOrg[] } = {}): Promise<AggregatorMember> {
    const m = await AggregatorMember.open(join(await temp.make('parley-receiver-refusals-'), 'db'), new MemoryStorage(), opts.self ?? org1!, { unpinned: opts.unpinned ?? false })
    open.push(m)
    await m.register(opts.register ?? [org0!, org1!, org2!, org3!], opts.groups ?? [group])
    return m
  }

  /** What the receiver throws for `b` from `from`, with its code; 'stored' when it takes it. */
  async function refusal(m: AggregatorMember, b: BatchPayload, from: Peer = peerOf(org0!)): Promise<string> {
    try {
      await m.receiver.handle(from, parseBatch(serializeBatch(b)))
    } catch (err) {
      expect(m.r.batches.byIdHash(b.id, b.hash), 'nothing of a refused batch is stored').to.equal(undefined)
      return `${(err as ParleyError).code}: ${(err as Error).message}`
    }
    return 'stored'
  }

  /** `b` with message `i`'s header changed by `fields` (and the message by `extra`), its hashes and the batch's resealed. */
  function altered(b: BatchPayload, i: number, fields: Partial<Header>, extra: Partial<BatchPayload['messages'][number]> = {}): BatchPayload {
    const messages = b.messages.map((m, j) => {
      if (j !== i) return m
      const header = { ...m.header, ...fields }
      return { ...m, header, hash: messageHash(header), ...extra }
    })
    return resealed({ ...b, messages })
  }
  const resealed = (b: BatchPayload): BatchPayload => ({ ...b, hash: sealManifest(b).hash })
  const unpinnedOf = (b: BatchPayload): BatchPayload => {
    const messages = b.messages.map((m) => {
      const header = { ...m.header, txtype: 'none' as const }
      const { pins: _, ...rest } = m
      return { ...rest, header, hash: messageHash(header) }
    })
    return resealed({ ...b, tx: { ...b.tx, type: 'unpinned' }, messages })
  }
  const batch = () => privateBatch(org0!, group, [['orders']], [[0]])

  it('takes a batch that passes every check (the cases below each break one)', async () => {
    const m = await member()
    expect(await refusal(m, batch())).to.equal('stored')
  })

  it('refuses a batch that is not private, not authored by the sending org, or naming another node', async () => {
    const m = await member()
    const b = batch()
    expect(await refusal(m, { ...b, type: 'broadcast' })).to.equal(`BAD_PEER_DATA: batch ${b.id} is a broadcast batch; only private batches travel peer to peer`)
    expect(await refusal(m, b, peerOf(org2!))).to.equal(`BAD_PEER_DATA: batch ${b.id} is authored by ${orgDid('org0')}, but was sent by a node of ${orgDid('org2')}`)
    const elsewhere = { ...peerOf(org0!), node: nodeDid('node9') }
    expect(await refusal(m, b, elsewhere)).to.equal(`BAD_PEER_DATA: batch ${b.id} names node ${nodeDid('node0')}, but was sent by ${nodeDid('node9')}`)
  })

  it('refuses an unpinned batch when this node takes none, and one that does not verify', async () => {
    const m = await member()
    const b = batch()
    const unpinned = unpinnedOf(b)
    expect(await refusal(m, unpinned)).to.equal(`BAD_PEER_DATA: batch ${unpinned.id} is unpinned, and this node takes no unpinned batches`)
    const claimed = 'f'.repeat(64) as Hash
    expect(await refusal(m, { ...b, hash: claimed })).to.equal(`BAD_PEER_DATA: batch ${b.id} does not verify: manifest hash ${b.hash} differs from the pinned batch hash ${claimed}`)
    const { group: _, ...groupless } = b
    expect(await refusal(m, groupless)).to.equal(`BAD_PEER_DATA: private batch ${b.id} names no group`)
  })

  it('refuses a message that does not belong in its private batch: its type, group, txtype, pins or topics', async () => {
    const m = await member()
    const b = batch()
    const id = b.messages[0]!.header.id
    expect(await refusal(m, altered(b, 0, { type: 'broadcast' }))).to.equal(`BAD_PEER_DATA: message ${id} of private batch ${b.id} is of type broadcast`)
    const other = 'e'.repeat(64) as Hash
    expect(await refusal(m, altered(b, 0, { group: other }))).to.equal(`BAD_PEER_DATA: message ${id} is for group ${other}, its batch for ${group.hash}`)
    expect(await refusal(m, altered(b, 0, { group: undefined }))).to.equal(`BAD_PEER_DATA: message ${id} is for group (none), its batch for ${group.hash}`)
    expect(await refusal(m, altered(b, 0, { txtype: 'none' }))).to.equal(`BAD_PEER_DATA: message ${id} has txtype none, its batch is batch_pin`)
    const pin = b.messages[0]!.pins![0]!
    expect(await refusal(m, altered(b, 0, { topics: ['orders', 'invoices'] }))).to.equal(`BAD_PEER_DATA: message ${id} carries 1 pins for 2 topics`)
    expect(await refusal(m, altered(b, 0, {}, { pins: undefined }))).to.equal(`BAD_PEER_DATA: message ${id} carries 0 pins for 1 topics`)
    expect(await refusal(m, altered(b, 0, { topics: ['orders', 'orders'] }, { pins: [pin, pin] }))).to.equal(`BAD_PEER_DATA: message ${id} names the same topic twice`)
  })

  it('refuses an unpinned batch carrying a groupinit or pins, where this node takes unpinned batches', async () => {
    const m = await member({ unpinned: true })
    const b = unpinnedOf(batch())
    const id = b.messages[0]!.header.id
    expect(await refusal(m, altered(b, 0, { type: 'groupinit' }))).to.equal('BAD_PEER_DATA: a groupinit message cannot travel unpinned')
    expect(await refusal(m, altered(b, 0, {}, { pins: [formatPin(privatePin('orders', group.hash, orgDid('org0'), 0), 0)] }))).to.equal(`BAD_PEER_DATA: unpinned message ${id} carries pins`)
    // Its group must be stored already: nothing orders an unpinned batch after the groupinit that defines it.
    const unknown = groupOf([org0!, org1!])
    const early = unpinnedOf(privateBatch(org0!, unknown, [['orders']], [[0]]))
    expect(await refusal(m, early)).to.equal(`UNAVAILABLE: group ${unknown.hash} is not known here yet: its groupinit is not confirmed`)
  })

  it('refuses a batch in another namespace than its group, or from a node outside it; waits for its own registration', async () => {
    const m = await member()
    const foreign = privateBatch(org0!, { ...group, namespace: 'other' }, [['orders']], [[0]])
    expect(await refusal(m, foreign)).to.equal(`BAD_PEER_DATA: batch ${foreign.id} is in namespace other, its group ${group.hash} in default`)

    // The author's org is in the group, but the node that sent it is not the author's node there (nor registered).
    const { node: _, ...nodeless } = batch()
    for (const node of ['node2', 'node9']) {
      expect(await refusal(m, nodeless, { ...peerOf(org0!), node: nodeDid(node) })).to.equal(`BAD_PEER_DATA: the author ${orgDid('org0')} on ${nodeDid(node)} is not a member of group ${group.hash}`)
    }

    const outsider = await member({ self: org3! })
    expect(await refusal(outsider, batch())).to.equal(`BAD_PEER_DATA: this node is not a member of group ${group.hash}`)
    const unregistered = await member({ register: [org0!, org2!] })
    expect(await refusal(unregistered, batch())).to.equal(`UNAVAILABLE: this node's own registration (${nodeDid('node1')}) is not confirmed here yet`)
  })

  it('refuses a group defined in the batch by a groupinit without its tag or with a bad value; waits for one still on its way', async () => {
    const m = await member({ groups: [] })
    const b = batch()
    expect(await refusal(m, b)).to.equal(`UNAVAILABLE: group ${group.hash} is not known here yet: the batch defining it has not arrived`)

    const author = localIdentity('org0', 'node0', org0!.key)
    /** `b` led by a groupinit for the batch's group, whose value (and data) is `source`'s, its header changed by `header`. */
    const withInit = (source: Groupinit, header: Partial<Header> = {}): BatchPayload => {
      const h = { ...source.message.header, group: group.hash, topics: [group.hash], ...header }
      const pins = [formatPin(privatePin(group.hash, group.hash, orgDid('org0'), 0), 0)]
      const message = { header: h, hash: messageHash(h), data: source.message.data, pins }
      return resealed({ ...b, messages: [message, ...b.messages], data: [source.data, ...b.data] })
    }
    const init = groupinitFor(group, author)
    expect(await refusal(m, withInit(init, { tag: undefined }))).to.equal(`BAD_PEER_DATA: groupinit ${init.message.header.id} has tag (none)`)
    // A groupinit whose value defines another group than the one its batch and header name.
    const other = groupOf([org0!, org1!])
    expect(await refusal(m, withInit(groupinitFor(other, author)))).to.equal(`BAD_PEER_DATA: group ${group.hash}: the group hashes to ${other.hash}, the message names group ${group.hash}`)
    // The well-formed groupinit defines the group, and the batch is taken.
    expect(await refusal(m, withInit(init))).to.equal('stored')
  })
})
