import { expect } from 'chai'
import { join } from 'node:path'
import { Database } from '../../node/db/database.js'
import { migrations } from '../../node/db/schema/index.js'
import { MessagesRepo } from '../../node/db/repos/messages.js'
import { DataRepo } from '../../node/db/repos/data.js'
import { BlobsRepo } from '../../node/db/repos/blobs.js'
import { BlobRefsRepo } from '../../node/db/repos/blob-refs.js'
import { IdentitiesRepo } from '../../node/db/repos/identities.js'
import { MessageSender } from '../../node/messaging/sender.js'
import { Confirmations } from '../../node/events/confirmations.js'
import { DataValidatorImpl } from '../../node/data/validator.js'
import { parseMessageInput } from '../../node/messaging/input.js'
import { parseJsonRaw } from '../../node/core/json.js'
import { ParleyError } from '../../node/core/errors.js'
import { newId, type IdentityId, type MessageId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { TempDirs } from '../db/helpers.js'
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
    db = await Database.open({ dir: join(await temp.make('parley-sender-'), 'db'), migrations })
    identities = new IdentitiesRepo(db)
    accepted = []
    sender = new MessageSender({
      db,
      messages: new MessagesRepo(db),
      data: new DataRepo(db),
      blobs: new BlobsRepo(db),
      refs: new BlobRefsRepo(db),
      identities,
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

    const id = newId<IdentityId>()
    await db.transaction((tx) => {
      identities.insert(tx, { id, did: 'did:firefly:org/org0', type: 'org', namespace: 'svc_system', name: 'org0', messages: { claim: newId<MessageId>() }, created: now() })
      identities.insertVerifier(tx, { identity: id, type: 'ethereum_address', value: KEY, created: now() })
    })
    const m = await sender.broadcast('default', input())
    expect(m.state).to.equal('ready')
    expect(accepted.map((a) => a.header.id)).to.deep.equal([m.header.id])
  })

  it('sends its own registration (a definition) before it is registered', async () => {
    const m = await sender.definition('svc_system', 'svc_identity_claim', ['t'], '{"identity":{}}')
    expect(m.header.type).to.equal('definition')
  })
})
