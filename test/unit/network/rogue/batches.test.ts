import { expect } from 'chai'
import { join } from 'node:path'
import { decodeBase58 } from 'ethers'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { checkBatch } from '../../../../node/batch/verify.js'
import { broadcastContext, groupHash, identityTopic, parsePin, privatePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type IdentityId } from '../../../../node/core/ids.js'
import { parseGroupinit } from '../../../../node/identity/groupinit.js'
import { MIN_BATCH_CHARGE_BYTES } from '../../../../node/aggregator/unpinned-quota.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { orgDid, SYSTEM_NAMESPACE, TAG_DEFINE_GROUP, TAG_IDENTITY_CLAIM } from '../../../../node/model/index.js'
import { AggregatorMember, groupOf, peerOf, registeredOrgs } from '../../../support/aggregator-member.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import {
  broadcastBatch,
  broadcastContexts,
  garbageContexts,
  garbagePinArgs,
  makeGroup,
  orgClaimBatch,
  privateBatch,
  privateContexts,
  unresolvableCid,
} from '../../../../network/rogue/batches.js'

describe('network/rogue/batches: what a hostile member builds', () => {
  const key = '0x00000000000000000000000000000000000000aa'
  const verifies = (b: ReturnType<typeof broadcastBatch>): void => {
    const again = parseBatch(serializeBatch(b))
    const checked = checkBatch(again, { batchId: b.id, batchHash: b.hash, txId: b.tx.id })
    expect(checked.ok, checked.ok ? '' : checked.reason).to.equal(true)
  }

  it('a broadcast batch verifies as a member checks one, and pins sha256 of each topic', () => {
    const b = broadcastBatch({ did: 'did:firefly:org/x', key }, 'ns1', [{ topic: 'a', value: { n: 1 } }, { topic: 'b', valueRaw: '"text"', tag: 't' }])
    verifies(b)
    expect(b.messages.map((m) => m.header.author)).to.deep.equal(['did:firefly:org/x', 'did:firefly:org/x'])
    expect(broadcastContexts(b)).to.deep.equal([broadcastContext('a'), broadcastContext('b')])
  })

  it('an org claim is a definition on the DID’s identity topic, signed by the claiming key', () => {
    const b = orgClaimBatch('org3', key)
    verifies(b)
    const m = b.messages[0]!
    expect(b.namespace).to.equal(SYSTEM_NAMESPACE)
    expect(m.header).to.include({ type: 'definition', tag: TAG_IDENTITY_CLAIM, author: 'did:firefly:org/org3', key })
    expect(m.header.topics).to.deep.equal([identityTopic('did:firefly:org/org3')])
    expect((JSON.parse(b.data[0]!.value!) as { identity: object }).identity).to.include({ did: 'did:firefly:org/org3', type: 'org', namespace: SYSTEM_NAMESPACE, name: 'org3' })
  })

  it('a private batch may carry a copy of another data item: its id and value (so its hash) with another datatype', () => {
    const g = makeGroup('ns', 'rogue', [{ identity: 'did:firefly:org/org1', node: newId<IdentityId>() }])
    const honest = broadcastBatch({ did: 'did:firefly:org/org0', key }, 'ns', [{ topic: 't', value: { pay: 10 } }]).data[0]!
    const b = privateBatch({ org: 'org1', node: 'node1', key }, g, [{ topic: 'u', value: undefined, valueRaw: honest.value!, dataId: honest.id, datatype: { name: 'nosuch', version: '1' }, nonce: 0 }])
    verifies(b)
    expect(b.data[0]).to.include({ id: honest.id, hash: honest.hash, value: honest.value })
    expect(b.data[0]!.datatype).to.deep.equal({ name: 'nosuch', version: '1' })
  })

  it('a group is hashed over its sorted members, as every member derives it', () => {
    const a = { identity: 'did:firefly:org/b', node: newId<IdentityId>() }
    const b = { identity: 'did:firefly:org/a', node: newId<IdentityId>() }
    const g = makeGroup('ns', 'n', [a, b])
    expect(g.members).to.deep.equal([b, a])
    expect(g.hash).to.equal(groupHash({ namespace: 'ns', name: 'n', members: [b, a] }))
  })

  it('a private batch carries its groupinit and masked pins, under the id it is given', () => {
    const node0 = newId<IdentityId>()
    const node1 = newId<IdentityId>()
    const g = makeGroup('ns', 'rogue', [{ identity: 'did:firefly:org/org1', node: node1 }, { identity: 'did:firefly:org/org0', node: node0 }, { identity: 'did:firefly:org/org0', node: node1 }])
    const id = newId<BatchId>()
    const b = privateBatch({ org: 'org1', node: 'node1', key }, g, [{ topic: 't', value: 1, nonce: 3 }], { withGroupinit: true, id })
    verifies(b)
    expect(b).to.include({ id, type: 'private', group: g.hash, node: 'did:firefly:node/node1', author: 'did:firefly:org/org1' })
    const [init, msg] = b.messages
    expect(init!.header).to.include({ type: 'groupinit', tag: TAG_DEFINE_GROUP, group: g.hash })
    const parsed = parseGroupinit(b.data[0]!.value, g.hash, 'ns')
    expect(parsed.ok && parsed.group.members).to.deep.equal(g.members)
    expect(parsePin(init!.pins![0]!)).to.deep.equal({ hash: privatePin(g.hash, g.hash, 'did:firefly:org/org1', 0), nonce: 0 })
    expect(parsePin(msg!.pins![0]!)).to.deep.equal({ hash: privatePin('t', g.hash, 'did:firefly:org/org1', 3), nonce: 3 })
    expect(privateContexts(b)).to.deep.equal([privatePin(g.hash, g.hash, 'did:firefly:org/org1', 0), privatePin('t', g.hash, 'did:firefly:org/org1', 3)])
  })

  it('a garbage pin: a fresh id, a junk hash and a CIDv0 of nothing, on the contexts given', () => {
    const a = garbagePinArgs([broadcastContext('orders')])
    const b = garbagePinArgs([])
    expect(a.batchId).to.not.equal(b.batchId)
    expect(a.batchHash).to.match(/^[0-9a-f]{64}$/)
    expect(a.contexts).to.deep.equal([broadcastContext('orders')])
    const cid = unresolvableCid()
    expect(cid).to.match(/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/)
    expect(decodeBase58(cid).toString(16).slice(0, 4)).to.equal('1220')
    expect(garbageContexts(3)).to.have.length(3)
  })

  it("flood-batches' batch (a new group's groupinit and one message) is taken by a receiver until its quota, then refused", async () => {
    const temp = new TempDirs()
    const [org0, org1] = registeredOrgs(2)
    const m = await AggregatorMember.open(join(await temp.make('parley-rogue-flood-'), 'db'), new MemoryStorage(), org1!, { unpinnedBatchBytes: 64 * MIN_BATCH_CHARGE_BYTES })
    try {
      await m.register([org0!, org1!], [groupOf([org0!, org1!])])
      const members = [org0!, org1!].map((o, i) => ({ identity: orgDid(`org${i}`), node: o.nodeId }))
      const outcomes: string[] = []
      for (let i = 0; i < 4; i++) {
        const b = privateBatch({ org: 'org0', node: 'node0', key: org0!.key }, makeGroup('default', `flood-${i}`, members), [{ topic: 'flood', value: 'x'.repeat(100_000), nonce: 0 }], { withGroupinit: true })
        try {
          await m.receiver.handle(peerOf(org0!), parseBatch(serializeBatch(b)))
          outcomes.push('stored')
        } catch (err) {
          outcomes.push(isParleyError(err, 'STORAGE_FULL') ? 'STORAGE_FULL' : String(err))
        }
      }
      expect(outcomes).to.deep.equal(['stored', 'stored', 'STORAGE_FULL', 'STORAGE_FULL'])
    } finally {
      await m.close()
      temp.cleanup()
    }
  })
})
