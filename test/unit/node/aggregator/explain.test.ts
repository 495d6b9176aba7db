import { expect } from 'chai'
import { join } from 'node:path'
import { explainWait, type ExplainDeps } from '../../../../node/aggregator/explain.js'
import { newId, type BatchId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { nodeDid, orgDid, SYSTEM_NAMESPACE, type BatchRecord } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { groupOf, registeredOrgs } from '../../../support/aggregator-member.js'
import { openRepos, type Repos } from '../../../support/repos.js'

/**
 * What a trace says for each reason a message waits, as far as this member knows where what is missing comes from:
 * over a real database of registered members, with the aggregator's own reasons (its seam) answering none.
 */
describe('aggregator: explaining why a message waits', () => {
  const temp = new TempDirs()
  const [org0, org1] = registeredOrgs(2)
  const group = groupOf([org0!, org1!])
  let repos: Repos
  let deps: ExplainDeps
  const orphan = newId<IdentityId>()

  before(async () => {
    repos = await openRepos(join(await temp.make('parley-explain-'), 'db'))
    await repos.db.transaction((tx) => {
      for (const o of [org0!, org1!]) {
        repos.identities.insert(tx, { id: o.orgId, did: orgDid(o.org), type: 'org', namespace: SYSTEM_NAMESPACE, name: o.org, messages: { claim: newId<MessageId>() }, created: now() })
        repos.identities.insert(tx, { id: o.nodeId, did: nodeDid(o.node), type: 'node', parent: o.orgId, namespace: SYSTEM_NAMESPACE, name: o.node, messages: { claim: newId<MessageId>() }, created: now() })
      }
      // A node whose org is not known here.
      repos.identities.insert(tx, { id: orphan, did: nodeDid('stray'), type: 'node', namespace: SYSTEM_NAMESPACE, name: 'stray', messages: { claim: newId<MessageId>() }, created: now() })
      repos.groups.insert(tx, group)
    })
    deps = { ...repos, explain: () => undefined }
  })
  after(async () => {
    await repos.db.close()
    await temp.cleanup()
  })

  const batch = (fields: Partial<BatchRecord>): BatchRecord => ({ id: newId<BatchId>(), type: 'private', namespace: 'default', author: orgDid('org0'), key: org0!.key, created: now(), hash: 'a'.repeat(64) as Hash, manifest: '{"messages":[]}', txId: newId<TxId>(), state: 'received', local: false, ...fields })

  it('words a pin, batch, datatype or identity wait with or without the detail its check gave', () => {
    expect(explainWait(deps, { reason: 'pin', topic: 'orders' })).to.deep.equal({ reason: 'pin', topic: 'orders', detail: 'its batch is here, but its pin for topic orders has not been read from the chain here yet' })
    expect(explainWait(deps, { reason: 'pin', topic: 'orders', detail: 'a broadcast pin is at its place' }).detail).to.equal('topic orders: a broadcast pin is at its place')
    expect(explainWait(deps, { reason: 'batch', detail: 'data d1 is missing' })).to.deep.equal({ reason: 'batch', detail: 'data d1 is missing' })
    const datatype = { name: 'widget', version: '2' }
    expect(explainWait(deps, { reason: 'datatype', datatype, detail: 'not defined here yet' })).to.deep.equal({ reason: 'datatype', datatype, detail: 'datatype widget/2: not defined here yet' })
    expect(explainWait(deps, { reason: 'datatype', detail: 'checked off the main thread' })).to.deep.equal({ reason: 'datatype', detail: 'checked off the main thread' })
    const author = orgDid('org9')
    expect(explainWait(deps, { reason: 'identity', author }).detail).to.equal(`the identity claim of ${author}, ordered before this message, is not applied here yet`)
    expect(explainWait(deps, { reason: 'identity', author, detail: 'its parent org is not registered' }).detail).to.equal('its parent org is not registered')
  })

  it('says where a blob comes from: shared storage, the peer node of a private batch (with its org), or nobody known', () => {
    const blob = 'b'.repeat(64) as Hash
    expect(explainWait(deps, { reason: 'blob', blob, cid: 'Qm1' })).to.deep.equal({ reason: 'blob', blob, cid: 'Qm1', detail: `its blob ${blob} is being fetched from shared storage (Qm1) and checked` })
    expect(explainWait(deps, { reason: 'blob', blob }, batch({ node: nodeDid('node0') }))).to.deep.equal({ reason: 'blob', blob, peer: nodeDid('node0'), org: 'org0', detail: `its blob ${blob} is not held here yet: ${nodeDid('node0')} (org0) sends it` })
    // A node whose org is not known here is named for its org too.
    expect(explainWait(deps, { reason: 'blob', blob }, batch({ node: nodeDid('stray') }))).to.include({ peer: nodeDid('stray'), org: nodeDid('stray') })
    for (const b of [undefined, batch({ type: 'broadcast', node: nodeDid('node0') }), batch({})]) {
      expect(explainWait(deps, { reason: 'blob', blob }, b)).to.deep.equal({ reason: 'blob', blob, detail: `its blob ${blob} is not held here yet` })
    }
  })

  it('names the peer a missing private message comes from, when the group says which node sends it', () => {
    const wait = { reason: 'blocked' as const, by: 'nonce' as const, topic: 'orders', group: group.hash, author: orgDid('org0'), nonce: 3 }
    const head = `blocked behind the message of ${orgDid('org0')} with nonce 3 on topic orders in group ${group.hash}`
    expect(explainWait(deps, wait)).to.deep.equal({
      reason: 'blocked',
      topic: 'orders',
      blockedBy: { author: orgDid('org0'), nonce: 3, topic: 'orders' },
      peer: nodeDid('node0'),
      org: 'org0',
      detail: `${head}: neither its batch from ${nodeDid('node0')} (org0) nor its pin has reached this member yet`,
    })
    // An author the group does not hold, or a group not stored here: no peer to name.
    const stranger = { ...wait, author: orgDid('org9') }
    expect(explainWait(deps, stranger).detail).to.equal(`blocked behind the message of ${orgDid('org9')} with nonce 3 on topic orders in group ${group.hash}: neither its batch nor its pin has reached this member yet`)
    const unknown = 'c'.repeat(64) as Hash
    expect(explainWait(deps, { ...wait, group: unknown })).to.not.have.property('peer')
  })

  it('says a group is not known when no groupinit for it has arrived', () => {
    const unknown = 'd'.repeat(64) as Hash
    expect(explainWait(deps, { reason: 'blocked', by: 'group', group: unknown })).to.deep.equal({ reason: 'blocked', detail: `its group ${unknown} is not known here yet: the groupinit defining it has not arrived` })
  })

  it('says a topic is free again when the pin that held it is decided or gone', () => {
    expect(explainWait(deps, { reason: 'blocked', by: 'topic', topic: 'orders', context: 'e'.repeat(64) as Hash, blocker: 424242 })).to.deep.equal({
      reason: 'blocked',
      topic: 'orders',
      detail: 'an earlier pin on topic orders held it back; it has been decided since, so the aggregator decides this message at its next walk',
    })
  })
})
