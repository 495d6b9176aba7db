import { expect } from 'chai'
import { join } from 'node:path'
import type { Database } from '../../node/db/database.js'
import type { IdentitiesRepo } from '../../node/db/repos/identities.js'
import { MessageSender } from '../../node/messaging/sender.js'
import { Confirmations } from '../../node/events/confirmations.js'
import { DataValidatorImpl } from '../../node/data/validator.js'
import { parseMessageInput } from '../../node/messaging/input.js'
import { parseJsonRaw } from '../../node/core/json.js'
import { ParleyError } from '../../node/core/errors.js'
import { TempDirs } from '../db/helpers.js'
import { openRepos, registerOrg } from '../support/repos.js'
import { localIdentity, type Message } from '../../node/model/index.js'
import { HTTP_STATUS } from '../../node/api/errors.js'

const KEY = '0x' + 'aa'.repeat(20)

/** The sender over a real (temporary) database, with the batch manager replaced by a list. */
describe('message sender', () => {
  const temp = new TempDirs()
  let db: Database
  let identities: IdentitiesRepo
  let accepted: Message[]
  let sender: MessageSender

  beforeEach(async () => {
    const repos = await openRepos(join(await temp.make('parley-sender-'), 'db'))
    ;({ db, identities } = repos)
    accepted = []
    sender = new MessageSender({
      ...repos,
      self: localIdentity('org0', 'node0', KEY),
      sink: { accepted: (m) => accepted.push(m) },
      validator: new DataValidatorImpl(() => undefined),
      confirmations: new Confirmations(),
    })
  })
  afterEach(() => db.close())
  after(() => temp.cleanup())

  const input = () => parseMessageInput(parseJsonRaw('{"data":[{"value":{"a":1}}]}'), { allowGroup: false })

  it('refuses application messages (503) until its own org claim is confirmed, then accepts them', async () => {
    let err: unknown
    try {
      await sender.broadcast('default', input())
    } catch (e) {
      err = e
    }
    expect(err).to.be.instanceOf(ParleyError)
    expect(HTTP_STATUS[(err as ParleyError).code]).to.equal(503)
    expect(accepted).to.deep.equal([])

    await registerOrg(db, identities, 'org0', KEY)
    const m = await sender.broadcast('default', input())
    expect(m.state).to.equal('ready')
    expect(accepted.map((a) => a.header.id)).to.deep.equal([m.header.id])
  })

  it('sends its own registration (a definition) before it is registered', async () => {
    const m = await sender.definition('svc_system', 'svc_identity_claim', ['t'], '{"identity":{}}')
    expect(m.header.type).to.equal('definition')
  })
})
