import { expect } from 'chai'
import type { MemberDescription, NetworkDescription } from '../../../../network/description.js'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { layout } from '../../../../network/layout.js'
import { RogueError, RogueMember, type RogueNetwork } from '../../../../network/rogue/member.js'
import { ScriptedNetwork } from '../../../support/scripted-network.js'

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

/** What reuse-id refuses once it has asked the hostile member's node about the message (a scripted node here). */
describe('network/rogue/member: reuse-id refused by what the member holds', () => {
  let scripted: ScriptedNetwork
  let dir: string
  let net: RogueNetwork
  const NS = '/api/v1/namespaces/default'

  before(async () => {
    scripted = await ScriptedNetwork.start(['org0', 'org1', 'org2'])
    dir = mkdtempSync(join(tmpdir(), 'rogue-'))
    const M = layout(dir).member('org0')
    mkdirSync(M.dir, { recursive: true })
    writeFileSync(M.signingKey, `0x${'11'.repeat(32)}\n`)
    const d = scripted.description
    net = { dir, description: d, member: (name) => d.members.find((x) => x.org === name || x.node === name) ?? expect.fail(`unknown member ${name}`) }
  })

  after(async () => {
    await scripted.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const refuses = async (attack: Promise<unknown>, message: string | RegExp): Promise<void> => {
    let err: unknown
    await attack.catch((e: unknown) => (err = e))
    expect(err).to.be.instanceOf(RogueError)
    if (typeof message === 'string') expect((err as Error).message).to.equal(message)
    else expect((err as Error).message).to.match(message)
  }

  it('refuses a message the member does not hold, a broadcast with --to, and --to naming an org outside the group', async () => {
    scripted.routes('org0', {
      [`${NS}/messages/mb`]: { header: { id: 'mb' } },
      [`${NS}/messages/mp`]: { header: { id: 'mp', group: 'g1' } },
      [`${NS}/groups/g1`]: { members: [{ identity: 'did:firefly:org/org0' }, { identity: 'did:firefly:org/org1' }] },
    })
    const rogue = new RogueMember(net, 'org0')
    await refuses(rogue.reuseId({ message: 'm9' }), /^reuse-id: org0 does not hold message m9 in namespace default \(org0: GET .* answered 404 /)
    await refuses(rogue.reuseId({ message: 'mb', to: ['org1'] }), 'reuse-id: message mb is a broadcast, fetched from shared storage: it takes no --to')
    await refuses(rogue.reuseId({ message: 'mp', to: ['org1', 'org2'] }), 'reuse-id: org2 is not a member of group g1')
  })

  it('with a datatype, refuses a message without data to copy, data that is a blob, and a value that does not hash back', async () => {
    scripted.routes('org0', {
      [`${NS}/messages/none/data`]: [],
      [`${NS}/messages/blob/data`]: [{ id: 'd1', hash: 'h', value: null, blob: { hash: 'b' } }],
      [`${NS}/messages/odd/data`]: [{ id: 'd2', hash: 'not-its-hash', value: { a: 1 } }],
    })
    const rogue = new RogueMember(net, 'org0')
    const datatype = { name: 'dt', version: '1' }
    await refuses(rogue.reuseId({ message: 'm9', datatype }), /^reuse-id: org0 does not hold message m9 in namespace default \(/)
    await refuses(rogue.reuseId({ message: 'none', datatype }), 'reuse-id --datatype: message none carries no data item with a value alone to copy')
    await refuses(rogue.reuseId({ message: 'blob', datatype }), 'reuse-id --datatype: message blob carries no data item with a value alone to copy')
    await refuses(rogue.reuseId({ message: 'odd', datatype }), 'reuse-id --datatype: the value of data d2 does not hash to not-its-hash once written again; it cannot be copied')
  })
})

