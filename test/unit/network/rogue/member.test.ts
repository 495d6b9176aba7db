import { expect } from 'chai'
import type { MemberDescription, NetworkDescription } from '../../../../network/description.js'
import { RogueError, RogueMember, type RogueNetwork } from '../../../../network/rogue/member.js'

/** What an attack refuses before it touches the network (no process runs here: a request would fail otherwise). */
describe('network/rogue/member: attacks asked of the wrong attacker or with impossible arguments', () => {
  const m = (i: number): MemberDescription => ({ org: `org${i}`, node: `node${i}`, did: `did:firefly:org/org${i}`, api: 'http://127.0.0.1:1', ws: 'ws://127.0.0.1:1/ws', p2p: 'https://127.0.0.1:1', key: `0x${i}` })
  const description: NetworkDescription = { chain: { rpc: 'http://127.0.0.1:1', chainId: 31337, contract: '0x0', firstBlock: 0 }, ipfs: { api: 'http://127.0.0.1:1', gateway: 'http://127.0.0.1:1' }, members: [m(0), m(1)] }
  const net: RogueNetwork = {
    dir: '/nonexistent',
    description,
    member: (name) => {
      const found = description.members.find((x) => x.org === name || x.node === name)
      if (!found) throw new Error(`unknown member ${name}`)
      return found
    },
  }
  const refuses = async (attack: Promise<unknown>, pattern: RegExp): Promise<void> => {
    let err: unknown
    await attack.catch((e: unknown) => (err = e))
    expect(err).to.be.instanceOf(RogueError)
    expect((err as Error).message).to.match(pattern)
  }

  it('what goes over the exchange needs a member, not a chain account', async () => {
    const account = new RogueMember(net, { account: 15 })
    await refuses(account.deliverUnder({ victim: 'org0', batch: 'b' }), /deliver-under is done by a member, with its node's certificate/)
    await refuses(account.foreignGroup(), /foreign-group is done by a member/)
    await refuses(new RogueMember(net, { fresh: true }).floodBlobs({ to: 'org0', bytes: 10, count: 1 }), /flood-blobs is done by a member/)
    await refuses(account.floodBatches({ to: 'org0', bytes: 10, count: 1 }), /flood-batches is done by a member/)
    await refuses(account.repinPrivate(), /repin-private is done by a member/)
  })

  it('names the impossible: no victim but itself, a pairing with its own node, blobs of no bytes, no batch to squat', async () => {
    const org1 = new RogueMember(net, 'org1')
    await refuses(org1.deliverUnder({ victim: 'org1', batch: 'b' }), /the victim is org1 itself/)
    await refuses(org1.foreignGroup({ org: 'org0', node: 'node0' }), /node0 is org0's own node; name another org's node/)
    await refuses(org1.floodBlobs({ to: 'org1', bytes: 10, count: 1 }), /org1 cannot flood itself/)
    await refuses(org1.floodBlobs({ to: 'org0', bytes: 3, count: 4 }), /3 bytes cannot make 4 blobs/)
    await refuses(org1.floodBlobs({ to: 'org0', bytes: 3, count: 0 }), /at least 1 \(got 0\)/)
    await refuses(org1.floodBatches({ to: 'org1', bytes: 10, count: 1 }), /flood-batches: org1 cannot flood itself/)
    await refuses(org1.floodBatches({ to: 'org0', bytes: 3, count: 4 }), /3 bytes cannot make 4 values/)
    await refuses(org1.floodBatches({ to: 'org0', bytes: 3, count: 0 }), /count of batches must be at least 1 \(got 0\)/)
    await refuses(org1.squatPin({}), /name a batch \(--batch ID\) or take the next one from the pool \(--next\)/)
    await refuses(org1.squatPin({ batch: 'b', next: true }), /one of the two/)
  })
})
