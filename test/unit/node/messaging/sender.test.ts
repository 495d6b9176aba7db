import { expect } from 'chai'
import { join } from 'node:path'
import type { Database } from '../../../../node/db/database.js'
import type { IdentitiesRepo } from '../../../../node/db/repos/identities.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerOrg } from '../../../support/repos.js'
import { localIdentity, MAX_MESSAGE_BYTES, type Message } from '../../../../node/model/index.js'
import { newId, type DataId } from '../../../../node/core/ids.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { now } from '../../../../node/core/time.js'
import { HTTP_STATUS } from '../../../../node/api/errors.js'

const KEY = '0x' + 'aa'.repeat(20)

/** The sender over a real (temporary) database, with the batch manager replaced by a list. */
describe('message sender', () => {
  const temp = new TempDirs()
  let db: Database
  let identities: IdentitiesRepo
  let accepted: Message[]
  let sender: MessageSender
  let repos: Awaited<ReturnType<typeof openRepos>>

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('parley-sender-'), 'db'))
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

  it('takes data named by id from this member’s own first, a peer’s only when no other item shares the id (else 400)', async () => {
    await registerOrg(db, identities, 'org0', KEY)
    const item = (value: string, id = newId<DataId>()) => ({ id, validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value })
    const byId = (id: string) => parseMessageInput(parseJsonRaw(JSON.stringify({ data: [{ id }] })), { allowGroup: false })
    // A peer's item alone under its id: the send carries it, as FireFly lets a member send received data on, and
    // stores it as this member's own (the received row stays as its batch carried it).
    const peers = item('{"peer":true}')
    await db.transaction((tx) => repos.data.insert(tx, peers, false))
    expect((await sender.broadcast('default', byId(peers.id))).data).to.deep.equal([{ id: peers.id, hash: peers.hash }])
    expect(repos.data.own(peers.id)?.value, 'now its own').to.equal(peers.value)
    // Its own from then on: a peer's item reusing that id later changes nothing.
    await db.transaction((tx) => repos.data.insert(tx, item('{"squat":true}', peers.id), false))
    expect((await sender.broadcast('default', byId(peers.id))).data).to.deep.equal([{ id: peers.id, hash: peers.hash }])
    const refused = async (id: string): Promise<void> => {
      const err = await sender.broadcast('default', byId(id)).then(() => undefined, (e: unknown) => e)
      expect(err).to.be.instanceOf(ParleyError)
      expect(HTTP_STATUS[(err as ParleyError).code]).to.equal(400)
      expect((err as ParleyError).message).to.equal(`data[0]: no data ${id} in namespace default`)
    }
    // Two peers' items under one id, not sent yet: which one is meant cannot be told, so neither is taken; nor when
    // they share the value and differ in a field the hash does not cover (here the datatype).
    const other = item('{"other":true}')
    await db.transaction((tx) => repos.data.insertMany(tx, [other, item('{"squat":true}', other.id)], false))
    await refused(other.id)
    const copied = item('{"copied":true}')
    await db.transaction((tx) => repos.data.insertMany(tx, [copied, { ...copied, datatype: { name: 'nosuch', version: '1' } }], false))
    await refused(copied.id)
    // This member's own item under the same id wins over both.
    const own = item('{"own":true}', other.id)
    await db.transaction((tx) => repos.data.insert(tx, own, true))
    expect((await sender.broadcast('default', byId(own.id))).data).to.deep.equal([{ id: own.id, hash: own.hash }])
  })

  it('sends its own registration (a definition) before it is registered', async () => {
    const m = await sender.definition('svc_system', 'svc_identity_claim', ['t'], '{"identity":{}}')
    expect(m.header.type).to.equal('definition')
  })

  it('refuses (413) a message that could only travel in a batch every member refuses, counting its encoded form and the data it refers to', async () => {
    await registerOrg(db, identities, 'org0', KEY)
    const refusal = async (body: string): Promise<string> => {
      try {
        // The member's own value limit raised to the network's, so the batch-size rule is what refuses.
        await sender.broadcast('default', parseMessageInput(parseJsonRaw(body), { allowGroup: false, limits: { ...DEFAULT_REQUEST_LIMITS, valueBytes: MAX_MESSAGE_BYTES } }))
      } catch (e) {
        expect(e).to.be.instanceOf(ParleyError)
        return `${(e as ParleyError).code}: ${(e as ParleyError).message}`
      }
      return 'accepted'
    }
    // 2 × 6 MiB of '<' is 75 MB once HTML-escaped as Go writes it: small as sent, too large as carried.
    const escaped = await refusal(JSON.stringify({ data: [{ value: '<'.repeat(6 * 1024 * 1024) }, { value: '<'.repeat(6 * 1024 * 1024) }] }))
    expect(escaped).to.match(new RegExp(`^PAYLOAD_TOO_LARGE: the message with its data is \\d+ bytes as a batch carries it .*; at most ${MAX_MESSAGE_BYTES}$`))
    // Uploaded values travel with the message that refers to them: five of 14 MiB are over the limit together.
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const value = JSON.stringify('v'.repeat(14 * 1024 * 1024))
      const d = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value }
      await db.transaction((tx) => repos.data.insert(tx, d, true))
      ids.push(d.id)
    }
    expect(await refusal(JSON.stringify({ data: ids.slice(0, 4).map((id) => ({ id })) }))).to.equal('accepted')
    expect(await refusal(JSON.stringify({ data: ids.map((id) => ({ id })) }))).to.match(/^PAYLOAD_TOO_LARGE: /)
    expect(accepted).to.have.length(1)
  })

})
