import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { ancestry, nodeOwnershipProblem } from '../../../../node/identity/ownership.js'
import { newId, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Identity, IdentityType } from '../../../../node/model/index.js'

/** Which node may receive for an identity in a group: one its identity or an ancestor owns (FireFly's ValidateNodeOwner). */
describe('identity: node ownership', () => {
  const temp = new TempDirs()
  let repos: Repos

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('ownership-'), 'db'))
  })
  afterEach(async () => {
    await repos.db.close()
  })
  after(() => temp.cleanup())

  async function add(name: string, type: IdentityType, parent?: Identity): Promise<Identity> {
    const i: Identity = { id: newId<IdentityId>(), did: `did:firefly:${type}/${name}`, type, ...(parent ? { parent: parent.id } : {}), namespace: 'svc_system', name, messages: { claim: newId<MessageId>() }, created: now() }
    await repos.db.transaction((tx) => repos.identities.insert(tx, i))
    return i
  }

  it('lets a node receive for its org and for an identity under that org; not for another org', async () => {
    const org = await add('acme', 'org')
    const other = await add('globex', 'org')
    const node = await add('n1', 'node', org)
    const team = await add('team', 'org', org)
    expect(nodeOwnershipProblem(repos.identities, org, node)).to.equal(undefined)
    expect(nodeOwnershipProblem(repos.identities, team, node), 'an ancestor owns it').to.equal(undefined)
    expect(nodeOwnershipProblem(repos.identities, other, node)).to.equal(`${node.did} belongs to ${org.did}, not to ${other.did}`)
  })

  it('refuses what is not a node, and names a node whose owner is not registered', async () => {
    const org = await add('acme', 'org')
    const orphan: Identity = { id: newId<IdentityId>(), did: 'did:firefly:node/orphan', type: 'node', parent: newId<IdentityId>(), namespace: 'svc_system', name: 'orphan', messages: { claim: newId<MessageId>() }, created: now() }
    expect(nodeOwnershipProblem(repos.identities, org, org)).to.equal(`${org.did} is not a node`)
    expect(nodeOwnershipProblem(repos.identities, org, orphan)).to.equal(`${orphan.did} belongs to no registered org, not to ${org.did}`)
  })

  it('walks an identity\'s parents to the top, and stops at a loop', async () => {
    const top = await add('top', 'org')
    const mid = await add('mid', 'org', top)
    const low = await add('low', 'org', mid)
    expect(ancestry(repos.identities, low).map((i) => i.name)).to.deep.equal(['low', 'mid', 'top'])
    const looped: Identity = { ...top, parent: low.id }
    expect(ancestry(repos.identities, looped).map((i) => i.name)).to.deep.equal(['top', 'low', 'mid'])
  })
})
