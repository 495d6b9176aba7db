import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { claimValue, identityClaimHandler } from '../../../../node/definitions/identity-claim.js'
import type { DefinitionOutcome } from '../../../../node/definitions/types.js'
import { dataHash, dataRefsHash, identityTopic, messageHash } from '../../../../node/core/hashes.js'
import { newId, type DataId, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type Data, type Header, type Identity, type Message, type NodeProfile } from '../../../../node/model/index.js'

const KEY_A = '0x' + 'aa'.repeat(20)
const KEY_B = '0x' + 'bb'.repeat(20)
const ORG_A = 'did:firefly:org/orgA'
const PROFILE: NodeProfile = { id: 'peer-a', endpoint: 'https://127.0.0.1:5111', cert: '-----BEGIN CERTIFICATE-----' }
/** The chain sequence the handler's eventEnd answers: an identity is registered after its claim's whole event. */
const EVENT_END = 17

/**
 * Identity claims in the chain's order: an org claims itself with its key, a node is claimed by its org with the
 * org's key and a profile. Whatever a claimant sends that does not hold is refused with its reason, and nothing is
 * registered; a node whose parent is not confirmed yet waits.
 */
describe('definitions: identity claims', () => {
  const temp = new TempDirs()
  let repos: Repos
  let confirmedNodes: Identity[]

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('claims-'), 'db'))
    confirmedNodes = []
  })
  afterEach(async () => {
    await repos.db.close()
  })
  after(() => temp.cleanup())

  /** A claim message by `author` carrying `values` as its data items (one, normally). */
  function claim(author: string, ...values: (string | null)[]): { message: Message; data: Data[] } {
    const data = values.map((value): Data => ({ id: newId<DataId>(), validator: 'json', namespace: SYSTEM_NAMESPACE, hash: dataHash({ valueRaw: value ?? '{}' }), created: now(), value }))
    const header: Header = {
      id: newId<MessageId>(),
      type: 'definition',
      txtype: 'batch_pin',
      author,
      key: KEY_A,
      created: now(),
      namespace: SYSTEM_NAMESPACE,
      topics: [identityTopic(author)],
      tag: TAG_IDENTITY_CLAIM,
      datahash: dataRefsHash(data.map((d) => ({ id: d.id, hash: d.hash }))),
    }
    return { message: { header, hash: messageHash(header), state: 'pending', data: data.map((d) => ({ id: d.id, hash: d.hash })) }, data }
  }

  async function handle(c: { message: Message; data: Data[] }, signer = KEY_A, pinSeq = 10): Promise<DefinitionOutcome> {
    const handler = identityClaimHandler(repos.identities, (node) => confirmedNodes.push(node), () => EVENT_END)
    const outcome = await repos.db.transaction((tx) => handler.handle(tx, c.message, c.data, signer, pinSeq))
    if (outcome.kind === 'confirm') outcome.afterCommit?.()
    return outcome
  }
  const reason = (o: DefinitionOutcome): string => (o.kind === 'reject' ? o.reason : `not rejected: ${o.kind}`)

  async function claimOrgA(): Promise<IdentityId> {
    const id = newId<IdentityId>()
    expect((await handle(claim(ORG_A, claimValue({ id, did: ORG_A, type: 'org', name: 'orgA' })))).kind).to.equal('confirm')
    return id
  }
  const nodeClaim = (parent: IdentityId | undefined, opts: { name?: string; profile?: NodeProfile; author?: string } = {}) => {
    const name = opts.name ?? 'nodeA'
    return claim(opts.author ?? ORG_A, claimValue({ id: newId<IdentityId>(), did: `did:firefly:node/${name}`, type: 'node', ...(parent ? { parent } : {}), name, profile: opts.profile ?? PROFILE }))
  }

  it('registers an org with its signing key as verifier, from the end of its claim\'s event on', async () => {
    const id = newId<IdentityId>()
    const c = claim(ORG_A, claimValue({ id, did: ORG_A, type: 'org', name: 'orgA' }))
    const out = await handle(c)
    expect(out).to.deep.equal({ kind: 'confirm', events: [{ type: 'identity_confirmed', namespace: SYSTEM_NAMESPACE, reference: id, topic: identityTopic(ORG_A) }] })
    expect(repos.identities.byDid(ORG_A)).to.deep.include({ id, type: 'org', name: 'orgA', registeredAfter: EVENT_END, messages: { claim: c.message.header.id } })
    expect(repos.identities.byVerifier('ethereum_address', KEY_A)?.id).to.equal(id)
  })

  it('registers a node claimed by its org with the org\'s key, its peer id as verifier, and tells the exchange after commit', async () => {
    const orgId = await claimOrgA()
    const out = await handle(nodeClaim(orgId), KEY_A, EVENT_END + 1)
    expect(out.kind).to.equal('confirm')
    const node = repos.identities.byDid('did:firefly:node/nodeA')!
    expect(node).to.deep.include({ type: 'node', parent: orgId, profile: PROFILE, registeredAfter: EVENT_END })
    expect(repos.identities.byVerifier('dx_peer_id', PROFILE.id)?.id).to.equal(node.id)
    expect(confirmedNodes.map((n) => n.did)).to.deep.equal(['did:firefly:node/nodeA'])
  })

  it('refuses a claim without exactly one data value, one that is not JSON, and one without an identity object', async () => {
    const value = claimValue({ id: newId<IdentityId>(), did: ORG_A, type: 'org', name: 'orgA' })
    expect(reason(await handle(claim(ORG_A)))).to.equal('an identity claim carries exactly one data value')
    expect(reason(await handle(claim(ORG_A, value, value)))).to.equal('an identity claim carries exactly one data value')
    expect(reason(await handle(claim(ORG_A, null)))).to.equal('an identity claim carries exactly one data value')
    expect(reason(await handle(claim(ORG_A, '{"identity":')))).to.equal('the identity claim is not JSON')
    for (const v of ['[]', '{"id":"x"}', '{"identity":"orgA"}']) expect(reason(await handle(claim(ORG_A, v))), v).to.equal('the identity claim has no identity object')
    expect(repos.identities.byDid(ORG_A)).to.equal(undefined)
  })

  it('refuses a claim without a UUID id, a type other than org or node, and a DID or id registered already', async () => {
    expect(reason(await handle(claim(ORG_A, `{"identity":{"did":"${ORG_A}","type":"org","name":"orgA"}}`)))).to.equal('the identity claim has no valid id')
    expect(reason(await handle(claim(ORG_A, `{"identity":{"id":"orgA","did":"${ORG_A}","type":"org","name":"orgA"}}`)))).to.equal('the identity claim has no valid id')
    expect(reason(await handle(claim(ORG_A, `{"identity":{"id":"${newId()}","did":"${ORG_A}","type":"custom","name":"orgA"}}`)))).to.equal('identity type custom is not org or node')
    expect(reason(await handle(claim(ORG_A, `{"identity":{"id":"${newId()}","did":"${ORG_A}","name":"orgA"}}`)))).to.equal('identity type (none) is not org or node')

    const orgId = await claimOrgA()
    expect(reason(await handle(claim(ORG_A, claimValue({ id: newId<IdentityId>(), did: ORG_A, type: 'org', name: 'orgA' }))))).to.equal(`${ORG_A} is already registered`)
    const reused = claimValue({ id: orgId, did: 'did:firefly:org/orgB', type: 'org', name: 'orgB' })
    expect(reason(await handle(claim('did:firefly:org/orgB', reused), KEY_B))).to.equal(`identity id ${orgId} is already registered`)
    expect(repos.identities.byDid('did:firefly:org/orgB')).to.equal(undefined)
  })

  it('refuses an org claim whose DID is not its name\'s, that another author sent, or whose key is taken', async () => {
    const value = (did: string, name: string) => claimValue({ id: newId<IdentityId>(), did, type: 'org', name })
    expect(reason(await handle(claim(ORG_A, value(ORG_A, 'orgB'))))).to.equal(`org claim: ${ORG_A} is not did:firefly:org/orgB`)
    expect(reason(await handle(claim('did:firefly:org/a b', value('did:firefly:org/a b', 'a b'))))).to.equal('org claim: did:firefly:org/a b is not did:firefly:org/a b')
    expect(reason(await handle(claim(ORG_A, `{"identity":{"id":"${newId()}","type":"org","name":"orgA"}}`)))).to.equal('org claim:  is not did:firefly:org/orgA')
    expect(reason(await handle(claim(ORG_A, `{"identity":{"id":"${newId()}","did":"${ORG_A}","type":"org"}}`)))).to.equal(`org claim: ${ORG_A} is not did:firefly:org/`)
    expect(reason(await handle(claim('did:firefly:org/orgB', value(ORG_A, 'orgA'))))).to.equal(`org claim for ${ORG_A} is authored by did:firefly:org/orgB`)
    await claimOrgA()
    expect(reason(await handle(claim('did:firefly:org/orgB', value('did:firefly:org/orgB', 'orgB'))))).to.equal(`key ${KEY_A} is already registered to ${ORG_A}`)
    expect(repos.identities.byDid('did:firefly:org/orgB')).to.equal(undefined)
  })

  it('waits for a node\'s parent that is not confirmed yet, naming it (or its absence)', async () => {
    const parent = newId<IdentityId>()
    expect(await handle(nodeClaim(parent))).to.deep.equal({ kind: 'wait', wait: { reason: 'identity', author: ORG_A, detail: `parent ${parent} of did:firefly:node/nodeA is not confirmed yet` } })
    expect(await handle(nodeClaim(undefined))).to.deep.equal({ kind: 'wait', wait: { reason: 'identity', author: ORG_A, detail: 'parent (none) of did:firefly:node/nodeA is not confirmed yet' } })
    expect(repos.identities.byDid('did:firefly:node/nodeA')).to.equal(undefined)
  })

  it('refuses a node claim whose DID is not its name\'s, whose parent is a node, or that its parent neither sent nor signed', async () => {
    const orgId = await claimOrgA()
    const badDid = claim(ORG_A, claimValue({ id: newId<IdentityId>(), did: 'did:firefly:node/other', type: 'node', parent: orgId, name: 'nodeA', profile: PROFILE }))
    expect(reason(await handle(badDid, KEY_A, 20))).to.equal('node claim: did:firefly:node/other is not did:firefly:node/nodeA')

    expect((await handle(nodeClaim(orgId), KEY_A, 20)).kind).to.equal('confirm')
    const nodeA = repos.identities.byDid('did:firefly:node/nodeA')!
    expect(reason(await handle(nodeClaim(nodeA.id, { name: 'nodeB', profile: { ...PROFILE, id: 'peer-b' } }), KEY_A, 20))).to.equal('parent of node did:firefly:node/nodeB is not an org')

    const orgB = claim('did:firefly:org/orgB', claimValue({ id: newId<IdentityId>(), did: 'did:firefly:org/orgB', type: 'org', name: 'orgB' }))
    expect((await handle(orgB, KEY_B)).kind).to.equal('confirm')
    const other = { name: 'nodeB', profile: { ...PROFILE, id: 'peer-b' } }
    expect(reason(await handle(nodeClaim(orgId, { ...other, author: 'did:firefly:org/orgB' }), KEY_B, 20))).to.equal(`node claim for did:firefly:node/nodeB is authored by did:firefly:org/orgB, not its parent ${ORG_A}`)
    expect(reason(await handle(nodeClaim(orgId, other), KEY_B, 20))).to.equal(`node claim for did:firefly:node/nodeB is signed by ${KEY_B}, not by its parent's key`)
    expect(reason(await handle(nodeClaim(orgId, other), '0x' + 'cc'.repeat(20), 20))).to.match(/is signed by 0xcc.*, not by its parent's key$/)
    expect(repos.identities.byDid('did:firefly:node/nodeB')).to.equal(undefined)
  })

  it('refuses a node claim ordered before its parent\'s registration, whichever payload came first here', async () => {
    const orgId = await claimOrgA()
    expect(reason(await handle(nodeClaim(orgId), KEY_A, EVENT_END))).to.equal(`node claim for did:firefly:node/nodeA comes before its parent ${ORG_A}'s claim in the chain's order`)
    expect(repos.identities.byDid('did:firefly:node/nodeA')).to.equal(undefined)
  })

  it('refuses a node claim without a whole profile, or with a peer id registered already', async () => {
    const orgId = await claimOrgA()
    const withProfile = (profile: string) => claim(ORG_A, `{"identity":{"id":"${newId()}","did":"did:firefly:node/nodeA","type":"node","parent":"${orgId}","namespace":"${SYSTEM_NAMESPACE}","name":"nodeA"${profile}}}`)
    const noProfile = 'node claim for did:firefly:node/nodeA has no profile {id, endpoint, cert}'
    for (const p of ['', ',"profile":"peer-a"', ',"profile":{"id":"peer-a","endpoint":"https://x"}', ',"profile":{"id":"","endpoint":"https://x","cert":"c"}', ',"profile":{"id":"peer-a","endpoint":7,"cert":"c"}']) {
      expect(reason(await handle(withProfile(p), KEY_A, 20)), p).to.equal(noProfile)
    }
    expect((await handle(nodeClaim(orgId), KEY_A, 20)).kind).to.equal('confirm')
    expect(reason(await handle(nodeClaim(orgId, { name: 'nodeB' }), KEY_A, 20))).to.equal(`peer id ${PROFILE.id} is already registered`)
    expect(repos.identities.byDid('did:firefly:node/nodeB')).to.equal(undefined)
    expect(confirmedNodes).to.have.length(1)
  })
})
