import { expect } from 'chai'
import { join } from 'node:path'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, formatPin, identityTopic, privatePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type IdentityId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { groupinitHandler } from '../../../../node/definitions/groupinit.js'
import { groupinitFor, sealGroup } from '../../../../node/identity/group-resolver.js'
import { claimPendingBefore } from '../../../../node/identity/pending.js'
import { localIdentity, orgDid, nodeDid, type BatchPayload, type Group, type GroupMember } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, resent, type RegisteredOrg } from '../../../support/aggregator-member.js'

/**
 * A groupinit naming an identity or node not registered yet waits only while a broadcast (a claim) that could register
 * it is pinned earlier and still waits. A private pin is used only by its group's members: counted, it would let a
 * member outside that group wait for good where one inside it decides. X (org1) is in org3's group {org3, org1}, Y
 * (org2) is not; both are in the group the groupinit creates.
 */
describe('aggregator: a groupinit decided alike inside and outside an earlier private group', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1, org2, org3] = registeredOrgs(4)
  const early = groupOf([org3!, org1!])
  const open: AggregatorMember[] = []
  afterEach(async () => {
    for (const m of open.splice(0)) await m.close()
  })
  after(() => temp.cleanup())

  async function member(self: RegisteredOrg): Promise<AggregatorMember> {
    const handlers = (r: AggregatorMember['r']) => [
      groupinitHandler({ groups: r.groups, identities: r.identities, claimPending: (tx, did, seq) => claimPendingBefore(r.pins, tx, did, seq), signerPending: (tx, key, seq) => r.pins.earlierUndispatchedBySigner(tx, key, seq) }),
    ]
    const m = await AggregatorMember.open(join(await temp.make('parley-masked-pending-'), 'db'), new MemoryStorage(), self, { definitions: handlers })
    open.push(m)
    await m.register([org0!, org1!, org2!, org3!], [early])
    return m
  }

  /** org0's groupinit (in a private batch of its own) of a group of org0, org1, org2 and `extra`. */
  function groupinitBatch(extra: GroupMember): { batch: BatchPayload; messageId: string } {
    const sealed = sealGroup('default', 'g2', [org0!, org1!, org2!].map((o) => ({ identity: orgDid(o.org), node: o.nodeId })).concat([extra]))
    const group: Group = { hash: sealed.hash, namespace: 'default', name: 'g2', members: sealed.members, created: now() }
    const gi = groupinitFor(group, localIdentity('org0', 'node0', org0!.key))
    const msg = { header: gi.message.header, hash: gi.message.hash, data: gi.message.data, pins: [formatPin(privatePin(group.hash, group.hash, orgDid('org0'), 0), 0)] }
    const id = newId<BatchId>()
    const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
    const { hash } = sealManifest({ id, tx, messages: [msg], data: [gi.data] })
    return { batch: { id, type: 'private', namespace: 'default', node: nodeDid('node0'), author: orgDid('org0'), key: org0!.key, group: group.hash, created: now(), hash, tx, messages: [msg], data: [gi.data] }, messageId: msg.header.id }
  }

  /** Delivers and pins org3's `first` batch (to X only), then the groupinit (to both): its state on X and on Y. */
  async function decide(first: BatchPayload, extra: GroupMember): Promise<(string | undefined)[]> {
    const [x, y] = [await member(org1!), await member(org2!)]
    const gi = groupinitBatch(extra)
    expect(await x.deliver(peerOf(org3!), first)).to.equal(undefined)
    for (const m of [x, y]) expect(await m.deliver(peerOf(org0!), gi.batch)).to.equal(undefined)
    for (const m of [x, y]) {
      await m.pin(pinLogOf({ payload: first }))
      await m.pin(pinLogOf({ payload: gi.batch }))
      await m.settle()
    }
    expect(x.r.pins.ofBatch(first.id).map((p) => p.dispatched), 'org3’s private pin used on X').to.deep.equal([true])
    return [x, y].map((m) => m.state(gi.messageId))
  }

  it('rejects a node nobody registered on both, whatever private pins its org’s key has waiting elsewhere', async () => {
    const states = await decide(privateBatch(org3!, early, [['t']], [[0]]), { identity: orgDid('org3'), node: newId<IdentityId>() })
    expect(states).to.deep.equal(['rejected', 'rejected'])
  })

  it('rejects an identity nobody claimed on both, whatever private pin equals its claim topic’s context', async () => {
    const crafted = broadcastContext(identityTopic(orgDid('org9')))
    const first = resent(privateBatch(org3!, early, [['t']], [[0]]), (d) => d, [formatPin(crafted, 0)])
    const states = await decide(first, { identity: orgDid('org9'), node: newId<IdentityId>() })
    expect(states).to.deep.equal(['rejected', 'rejected'])
  })
})
