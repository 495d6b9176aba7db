import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { registerSelf } from '../../../../node/definitions/registration.js'
import { StorageGate } from '../../../../node/db/capacity.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { newId, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { localIdentity, type Message, type NodeProfile } from '../../../../node/model/index.js'

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

  it('stops between the claims when the node stops as the org claim is sent', async () => {
    const stop = new AbortController()
    await register(sender(undefined, () => stop.abort()), stop.signal)
    expect(sent).to.have.length(1)
    expect(repos.state.get('identity.org.claimed'), 'the claim sent is recorded').to.equal(sent[0]!.header.id)
    expect(repos.state.get('identity.node.id')).to.equal(undefined)
    expect(lines).to.deep.equal([])
  })
})
