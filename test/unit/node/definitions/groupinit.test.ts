import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerMembers, type Repos } from '../../../support/repos.js'
import { groupinitHandler } from '../../../../node/definitions/groupinit.js'
import type { DefinitionOutcome } from '../../../../node/definitions/types.js'
import { groupinitFor, sealGroup } from '../../../../node/identity/group-resolver.js'
import { newId, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { localIdentity, type Group, type GroupMember } from '../../../../node/model/index.js'

const NS = 'default'
const KEY0 = '0x' + '0a'.repeat(20)

/**
 * A groupinit is decided by every member it reaches, in its turn on chain: a group that pairs an org with a node of
 * another org is refused (its private messages would go to that org), alike on every member, and an identity or
 * node not registered yet is waited for only while its claim can still precede the groupinit.
 */
describe('definitions: groupinit', () => {
  const temp = new TempDirs()
  let repos: Repos
  let orgs: IdentityId[]
  let nodes: IdentityId[]
  let pending: { claims: Set<string>; signers: Set<string> }

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('groupinit-'), 'db'))
    ;({ orgs, nodes } = await registerMembers(repos, 3))
    await repos.db.transaction((tx) => repos.identities.insertVerifier(tx, { identity: orgs[0]!, type: 'ethereum_address', value: KEY0, created: now() }))
    pending = { claims: new Set(), signers: new Set() }
  })
  afterEach(async () => {
    await repos.db.close()
    await temp.cleanup()
  })

  const handler = () =>
    groupinitHandler({
      groups: repos.groups,
      identities: repos.identities,
      claimPending: (_tx, did) => pending.claims.has(did),
      signerPending: (_tx, key) => pending.signers.has(key),
    })

  async function decide(members: GroupMember[]): Promise<{ outcome: DefinitionOutcome; group: Group }> {
    const sealed = sealGroup(NS, 'g', members)
    const group: Group = { hash: sealed.hash, namespace: NS, name: 'g', members: sealed.members, created: now() }
    const author = localIdentity('org0', 'node0', KEY0)
    const { message, data } = groupinitFor(group, author)
    const outcome = await repos.db.transaction((tx) => handler().handle(tx, message, [data], KEY0, 10))
    return { outcome, group }
  }
  const org = (i: number) => `did:firefly:org/org${i}`

  it('confirms a group whose every org is paired with a node of its own, and stores it', async () => {
    const { outcome, group } = await decide([{ identity: org(0), node: nodes[0]! }, { identity: org(1), node: nodes[1]! }])
    expect(outcome.kind).to.equal('confirm')
    expect(repos.groups.byHash(group.hash)?.members).to.have.length(2)
  })

  it('refuses a group pairing an org with another org\'s node, naming both, and stores nothing', async () => {
    const { outcome, group } = await decide([{ identity: org(0), node: nodes[0]! }, { identity: org(1), node: nodes[2]! }])
    expect(outcome).to.deep.equal({ kind: 'reject', reason: 'group member did:firefly:org/org1: did:firefly:node/node2 belongs to did:firefly:org/org2, not to did:firefly:org/org1' })
    expect(repos.groups.byHash(group.hash)).to.equal(undefined)
  })

  it('refuses a node named as a member\'s identity', async () => {
    const node1 = repos.identities.byId(nodes[1]!)!
    const { outcome } = await decide([{ identity: org(0), node: nodes[0]! }, { identity: node1.did, node: nodes[1]! }])
    expect(outcome.kind).to.equal('reject')
    expect((outcome as { reason: string }).reason).to.match(/is a node/)
  })

  it('refuses an org or node registered only after the groupinit in the chain\'s order, whatever arrived first here', async () => {
    const lateOrg = newId<IdentityId>()
    const lateNode = newId<IdentityId>()
    await repos.db.transaction((tx) => {
      repos.identities.insert(tx, { id: lateOrg, did: 'did:firefly:org/late', type: 'org', namespace: 'svc_system', name: 'late', messages: { claim: newId<MessageId>() }, created: now(), registeredAfter: 50 })
      repos.identities.insert(tx, { id: lateNode, did: 'did:firefly:node/late', type: 'node', parent: orgs[1]!, namespace: 'svc_system', name: 'late', messages: { claim: newId<MessageId>() }, created: now(), registeredAfter: 50 })
    })
    // The groupinit's first pin is at 10 (decide() below).
    const byOrg = (await decide([{ identity: org(0), node: nodes[0]! }, { identity: 'did:firefly:org/late', node: nodes[1]! }])).outcome
    expect(byOrg).to.deep.equal({ kind: 'reject', reason: 'group member did:firefly:org/late was registered only after this group, in the chain\'s order' })
    const byNode = (await decide([{ identity: org(0), node: nodes[0]! }, { identity: org(1), node: lateNode }])).outcome
    expect(byNode).to.deep.equal({ kind: 'reject', reason: `group member ${org(1)}: node did:firefly:node/late was registered only after this group, in the chain's order` })
  })

  it('waits for an org whose claim was pinned earlier and is not applied yet; refuses one nobody claimed before it', async () => {
    const stranger = 'did:firefly:org/late'
    const members = [{ identity: org(0), node: nodes[0]! }, { identity: stranger, node: newId<IdentityId>() }]
    expect((await decide(members)).outcome).to.deep.equal({ kind: 'reject', reason: `group member ${stranger} is not a registered identity` })
    pending.claims.add(stranger)
    expect((await decide(members)).outcome.kind).to.equal('wait')
  })

  it('refuses a message other than a groupinit, one without exactly one data item, and a value that is no group', async () => {
    const sealed = sealGroup(NS, 'g', [{ identity: org(0), node: nodes[0]! }, { identity: org(1), node: nodes[1]! }])
    const group: Group = { hash: sealed.hash, namespace: NS, name: 'g', members: sealed.members, created: now() }
    const { message, data } = groupinitFor(group, localIdentity('org0', 'node0', KEY0))
    const handle = (m: typeof message, d: (typeof data)[]) => repos.db.transaction((tx) => handler().handle(tx, m, d, KEY0, 10))
    expect(await handle({ ...message, header: { ...message.header, type: 'private' } }, [data])).to.deep.equal({ kind: 'reject', reason: 'a private message cannot define a group' })
    expect(await handle(message, [])).to.deep.equal({ kind: 'reject', reason: 'a groupinit carries one data item, not 0' })
    expect(await handle(message, [data, data])).to.deep.equal({ kind: 'reject', reason: 'a groupinit carries one data item, not 2' })
    expect(await handle(message, [{ ...data, value: '[]' }])).to.deep.equal({ kind: 'reject', reason: 'the groupinit value is not an object' })
    expect(repos.groups.byHash(group.hash)).to.equal(undefined)
  })

  it('refuses a group its author is not a member of', async () => {
    const sealed = sealGroup(NS, 'g', [{ identity: org(1), node: nodes[1]! }, { identity: org(2), node: nodes[2]! }])
    const group: Group = { hash: sealed.hash, namespace: NS, name: 'g', members: sealed.members, created: now() }
    const { message, data } = groupinitFor(group, localIdentity('org0', 'node0', KEY0))
    const outcome = await repos.db.transaction((tx) => handler().handle(tx, message, [data], KEY0, 10))
    expect(outcome).to.deep.equal({ kind: 'reject', reason: `its author ${org(0)} is not a member of the group it defines` })
    expect(repos.groups.byHash(group.hash)).to.equal(undefined)
  })

  it('waits for a node while its org\'s key has an earlier pin waiting; refuses an unknown node otherwise', async () => {
    const unknownNode = newId<IdentityId>()
    const members = [{ identity: org(0), node: unknownNode }, { identity: org(1), node: nodes[1]! }]
    const refused = (await decide(members)).outcome
    expect(refused).to.deep.equal({ kind: 'reject', reason: `group member ${org(0)}: node ${unknownNode} is not a registered node` })
    pending.signers.add(KEY0)
    const waited = (await decide(members)).outcome
    expect(waited.kind).to.equal('wait')
    // Another org's key having pins waiting is no reason to wait for org0's node.
    pending.signers.clear()
    pending.signers.add('0x' + '0b'.repeat(20))
    expect((await decide(members)).outcome.kind).to.equal('reject')
  })
})
