import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { registerSelf } from '../../../../node/definitions/registration.js'
import { StorageGate } from '../../../../node/db/capacity.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { identityTopic } from '../../../../node/core/hashes.js'
import { newId, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { localIdentity, type Message, type NodeProfile } from '../../../../node/model/index.js'
import { waitUntil } from '../../../support/wait.js'

const KEY = '0x' + 'aa'.repeat(20)
const SELF = localIdentity('org1', 'node1', KEY)
const PROFILE: NodeProfile = { id: 'org1/node1', endpoint: 'https://127.0.0.1:5111', cert: 'a certificate' }

/**
 * A member registering itself: an org claim, then a node claim, each sent once across restarts (the ids and what was
 * sent are recorded), nothing for what is registered already, and a step that fails tried again until the node stops.
 */
describe('definitions: registering this member', () => {
  const temp = new TempDirs()
  let repos: Repos
  let sent: Message[]
  let lines: string[]

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('registration-'), 'db'))
    sent = []
    lines = []
  })
  afterEach(async () => {
    await repos.db.close()
  })
  after(() => temp.cleanup())

  function sender(gate?: StorageGate, onSent?: (m: Message) => void): MessageSender {
    return new MessageSender({
      ...repos,
      self: SELF,
      sink: {
        accepted: (m) => {
          sent.push(m)
          onSent?.(m)
        },
      },
      validator: new DataValidatorImpl(() => undefined),
      confirmations: new Confirmations(),
      ...(gate ? { gate } : {}),
    })
  }
  const register = (s: MessageSender, signal = new AbortController().signal) => registerSelf({ ...repos, sender: s, self: SELF, profile: PROFILE, log: (l) => lines.push(l), signal })
  /** The identity a sent claim carries. */
  const claimed = (m: Message) => (JSON.parse(repos.data.get(m.data[0]!.id)!.value!) as { identity: { id: string; did: string; type: string; parent?: string; profile?: NodeProfile } }).identity

  async function registerOrgHere(): Promise<IdentityId> {
    const id = newId<IdentityId>()
    await repos.db.transaction((tx) => repos.identities.insert(tx, { id, did: SELF.orgDid, type: 'org', namespace: 'svc_system', name: 'org1', messages: { claim: newId<MessageId>() }, created: now() }))
    return id
  }

  it('claims its org, then its node under it with its profile, recording each id and claim', async () => {
    await register(sender())
    expect(sent.map((m) => m.header.topics)).to.deep.equal([[identityTopic(SELF.orgDid)], [identityTopic(SELF.nodeDid)]])
    const [org, node] = sent.map(claimed)
    expect(org).to.deep.include({ id: repos.state.get('identity.org.id'), did: SELF.orgDid, type: 'org' })
    expect(node).to.deep.include({ id: repos.state.get('identity.node.id'), did: SELF.nodeDid, type: 'node', parent: org!.id, profile: PROFILE })
    expect(repos.state.get('identity.org.claimed')).to.equal(sent[0]!.header.id)
    expect(repos.state.get('identity.node.claimed')).to.equal(sent[1]!.header.id)
    expect(lines).to.deep.equal([`identity: claimed ${SELF.orgDid} (message ${sent[0]!.header.id})`, `identity: claimed ${SELF.nodeDid} (message ${sent[1]!.header.id})`])
  })

  it('after a restart, sends neither claim again, and claims a node under the org id it recorded', async () => {
    await register(sender())
    const first = sent.splice(0)
    await register(sender())
    expect(sent, 'both claims recorded as sent').to.deep.equal([])

    await repos.db.transaction((tx) => repos.state.set(tx, 'identity.node.claimed', ''))
    await register(sender())
    expect(sent).to.have.length(1)
    expect(claimed(sent[0]!)).to.deep.include({ id: claimed(first[1]!).id, parent: claimed(first[0]!).id })
  })

  it('claims only its node under its registered org, and nothing once both are registered', async () => {
    const orgId = await registerOrgHere()
    await register(sender())
    expect(sent.map((m) => claimed(m))).to.have.length(1)
    expect(claimed(sent[0]!)).to.deep.include({ type: 'node', parent: orgId })
    expect(repos.state.get('identity.org.claimed')).to.equal(undefined)

    await repos.db.transaction((tx) => repos.identities.insert(tx, { id: newId<IdentityId>(), did: SELF.nodeDid, type: 'node', parent: orgId, namespace: 'svc_system', name: 'node1', messages: { claim: newId<MessageId>() }, created: now() }))
    await repos.db.transaction((tx) => repos.state.set(tx, 'identity.node.claimed', ''))
    sent.length = 0
    await register(sender())
    expect(sent).to.deep.equal([])
  })

  it('tries a refused send again, logging the problem once, until the node stops; then records no claim', async () => {
    const stop = new AbortController()
    // A database at its ceiling refuses new sends (STORAGE_FULL).
    const full = new StorageGate(repos.db, () => {}, 1)
    const done = register(sender(full), stop.signal)
    await waitUntil('the refusal is logged', () => lines.length === 1, { intervalMs: 5 })
    expect(lines[0]).to.match(/^identity: registration failed, retrying: the database holds \d+ bytes/)
    stop.abort()
    await done
    expect(sent).to.deep.equal([])
    expect(repos.state.get('identity.org.id'), 'the id chosen is kept for the next start').to.be.a('string')
    expect(repos.state.get('identity.org.claimed')).to.equal(undefined)
    expect(lines).to.have.length(1)
  })

  it('records and logs the node claim sent as the node stops', async () => {
    await registerOrgHere()
    const stop = new AbortController()
    await register(sender(undefined, () => stop.abort()), stop.signal)
    expect(sent).to.have.length(1)
    expect(repos.state.get('identity.node.claimed')).to.equal(sent[0]!.header.id)
    expect(lines).to.deep.equal([`identity: claimed did:firefly:node/node1 (message ${sent[0]!.header.id})`])
  })

  it('keeps the node\'s id but records no claim when its send is refused until the node stops', async () => {
    await registerOrgHere()
    const stop = new AbortController()
    const done = register(sender(new StorageGate(repos.db, () => {}, 1)), stop.signal)
    await waitUntil('the refusal is logged', () => lines.length === 1, { intervalMs: 5 })
    stop.abort()
    await done
    expect(sent).to.deep.equal([])
    expect(repos.state.get('identity.node.id')).to.be.a('string')
    expect(repos.state.get('identity.node.claimed')).to.equal(undefined)
  })

  it('logs no failure for a step that fails because the node is stopping', async () => {
    const stop = new AbortController()
    // The gate's first reading crosses its ceiling: the node stops as the send is refused.
    const gate = new StorageGate(repos.db, () => stop.abort(), 1)
    await register(sender(gate), stop.signal)
    expect(stop.signal.aborted).to.equal(true)
    expect(sent).to.deep.equal([])
    expect(lines).to.deep.equal([])
  })

  it('stops between the claims when the node stops as the org claim is sent', async () => {
    const stop = new AbortController()
    await register(sender(undefined, () => stop.abort()), stop.signal)
    expect(sent).to.have.length(1)
    expect(repos.state.get('identity.org.claimed'), 'the claim sent is recorded').to.equal(sent[0]!.header.id)
    expect(repos.state.get('identity.node.id')).to.equal(undefined)
    expect(lines).to.deep.equal([`identity: claimed did:firefly:org/org1 (message ${sent[0]!.header.id})`])
  })
})
