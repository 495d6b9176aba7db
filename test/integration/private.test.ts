import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { layout } from '../../network/layout.js'
import type { MemberDescription } from '../../network/description.js'
import { broadcastContext, dataHash, dataRefsHash, formatPin, messageHash, privatePin } from '../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { sealManifest } from '../../node/batch/verify.js'
import { serializeBatch } from '../../node/batch/payload.js'
import type { BatchPayload, Data, Header } from '../../node/model/index.js'
import { sharedNetwork } from '../support/shared-network.js'
import { confirmationOrder, get, messageReaching, nsBase, plain, request, runId, waitConfirmedAll, type ApiChainEvent, type ApiMessage } from '../support/api.js'
import { rawRequest } from '../support/exchange-harness.js'
import { waitUntil } from '../support/wait.js'

const HASH_RE = /^[0-9a-f]{64}$/
const PIN_RE = /^[0-9a-f]{64}:\d{16}$/

function sendPrivate(m: MemberDescription, ns: string, body: unknown, path = 'messages/private', confirm = false) {
  return request<ApiMessage>('POST', `${nsBase(m, ns)}/${path}${confirm ? '?confirm=true' : ''}`, body)
}

describe('private messaging on a real 3-member network', function () {
  this.timeout(180_000)
  const t = sharedNetwork()
  const { members } = t
  const run = runId()
  const ns = `priv-${run}`
  const N = 100
  const sent: ApiMessage[] = []
  const topicOf = new Map<string, string>()
  let group: Hash

  it('org0 sends private messages to org1: 202, type private, batch_pin, the group hash, ready', async () => {
    const [org0, org1] = members
    for (let i = 0; i < N; i++) {
      const topic = i % 2 === 0 ? `ta-${run}` : `tb-${run}`
      const r = await sendPrivate(org0!, ns, { header: { topics: [topic], tag: 'p' }, group: { members: [{ identity: org1!.org }] }, data: [{ value: { i } }] })
      expect(r.status, JSON.stringify(r.body)).to.equal(202)
      expect(r.body.header.type).to.equal('private')
      expect(r.body.header.txtype).to.equal('batch_pin')
      expect(r.body.header.group).to.match(HASH_RE)
      expect(r.body.state).to.equal('ready')
      if (i === 0) group = r.body.header.group as Hash
      expect(r.body.header.group, 'one group for the same members').to.equal(group)
      sent.push(r.body)
      topicOf.set(r.body.header.id, topic)
    }
  })

  it('org1 (and org0) confirm all, in per-topic send order', async () => {
    const [org0, org1] = members
    const ids = sent.map((m) => m.header.id)
    await waitConfirmedAll(org1!, ns, ids, 90_000)
    await waitConfirmedAll(org0!, ns, ids, 90_000)
    const expected: Record<string, string[]> = {}
    for (const m of sent) (expected[topicOf.get(m.header.id)!] ??= []).push(m.header.id)
    expect(plain(await confirmationOrder(org1!, ns, topicOf))).to.deep.equal(expected)
    expect(plain(await confirmationOrder(org0!, ns, topicOf))).to.deep.equal(expected)
    const got = await get<ApiMessage & { pins?: string[] }>(`${nsBase(org1!, ns)}/messages/${ids[0]}`)
    expect(got.body.pins).to.have.length(1)
    expect(got.body.pins![0]).to.match(PIN_RE)
    const data = await get<{ value: unknown }[]>(`${nsBase(org1!, ns)}/messages/${ids[3]}/data`)
    expect(data.body.map((d) => d.value)).to.deep.equal([{ i: 3 }])
  })

  it('both members know the group (learned by org1 from the groupinit); org2 sees neither group nor messages (404)', async () => {
    const [org0, org1, org2] = members
    for (const m of [org0!, org1!]) {
      const g = await get<{ hash: string; members: { identity: string }[] }>(`${nsBase(m, ns)}/groups/${group}`)
      expect(g.status, m.org).to.equal(200)
      expect(g.body.members.map((x) => x.identity).sort()).to.deep.equal([org0!.did, org1!.did].sort())
    }
    expect((await get(`${nsBase(org2!, ns)}/groups/${group}`)).status).to.equal(404)
    for (const m of sent.slice(0, 3)) expect((await get(`${nsBase(org2!, ns)}/messages/${m.header.id}`)).status).to.equal(404)
    const list = await get<ApiMessage[]>(`${nsBase(org2!, ns)}/messages`)
    expect(list.body).to.deep.equal([])
  })

  it("the sender records each batch's pin and its delivery to org1's node as operations of the batch's transaction", async () => {
    const [org0, org1] = members
    const msg = (await get<ApiMessage>(`${nsBase(org0!, ns)}/messages/${sent[0]!.header.id}`)).body
    const node1 = (await get<{ id: string }>(`${org1!.api}/api/v1/network/nodes/${org1!.node}`)).body.id
    type Op = { type: string; status: string; input: Record<string, unknown>; output?: Record<string, string> }
    const ops = async () => (await get<Op[]>(`${nsBase(org0!, ns)}/transactions/${msg.txid}/operations`)).body
    await waitUntil('the pin and the delivery recorded on the sender', async () => {
      const now = await ops()
      return now.length === 2 && now.every((o) => o.status === 'Succeeded')
    }, { timeoutMs: 30_000 })
    const recorded = await ops()
    expect(recorded.find((o) => o.type === 'dataexchange_send_batch')!.input).to.deep.equal({ node: node1, group, batch: msg.batch })
    // org1 knows the same transaction, pinned by the chain transaction the sender's pin operation names.
    const there = await get<{ type: string; blockchainIds: string[] }>(`${nsBase(org1!, ns)}/transactions/${msg.txid}`)
    expect(there.body.type).to.equal('batch_pin')
    expect(there.body.blockchainIds).to.deep.equal([recorded.find((o) => o.type === 'blockchain_pin_batch')!.output!.transactionHash])
  })

  it('the pins on chain reveal nothing: no payload reference, no context equal to a topic hash', async () => {
    const org2 = members[2]!
    const r = await get<ApiChainEvent[]>(`${org2.api}/api/v1/blockchainevents?limit=1000`)
    const topicHashes = new Set([`ta-${run}`, `tb-${run}`, group].map((x) => broadcastContext(x)))
    const privateEvents = r.body.filter((e) => e.output.payloadRef === '')
    expect(privateEvents.length).to.be.greaterThan(0)
    for (const e of privateEvents) {
      const contexts = (e.output as unknown as { contexts: string[] }).contexts.map((c) => c.replace(/^0x/, ''))
      for (const c of contexts) expect(topicHashes.has(c as Hash), c).to.equal(false)
    }
    // The contexts are the masked pins the messages carry.
    const got = await get<ApiMessage & { pins?: string[] }>(`${nsBase(members[0]!, ns)}/messages/${sent[0]!.header.id}`)
    const pin = got.body.pins![0]!.split(':')[0]!
    const all = privateEvents.flatMap((e) => (e.output as unknown as { contexts: string[] }).contexts.map((c) => c.replace(/^0x/, '')))
    expect(all).to.include(pin)
  })

  it('confirm=true answers 200 confirmed; send/message is the same send; a reused idempotency key is 409; header.group names a known group', async () => {
    const [org0, org1] = members
    const key = `idem-${run}`
    const r = await sendPrivate(org0!, ns, { header: { topics: [`tc-${run}`] }, group: { members: [{ identity: org1!.did }] }, data: [{ value: 'sync' }], idempotencyKey: key }, 'send/message', true)
    expect(r.status, JSON.stringify(r.body)).to.equal(200)
    expect(r.body.state).to.equal('confirmed')
    expect(r.body.header.group).to.equal(group)
    const again = await sendPrivate(org0!, ns, { group: { members: [{ identity: org1!.org }] }, data: [{ value: 'x' }], idempotencyKey: key })
    expect(again.status).to.equal(409)
    const byHash = await sendPrivate(org0!, ns, { header: { group }, data: [{ value: 'by hash' }] })
    expect(byHash.status, JSON.stringify(byHash.body)).to.equal(202)
    expect(byHash.body.header.group).to.equal(group)
    await messageReaching(org1!, ns, byHash.body.header.id, ['confirmed'], 60_000)
  })

  it('an unpinned send (txtype none, or FireFly\'s unpinned) is confirmed at once on the sender and on arrival at the recipient, with nothing on chain', async () => {
    const [org0, org1, org2] = members
    for (const txtype of ['none', 'unpinned']) {
      const r = await sendPrivate(org0!, ns, { header: { topics: [`tu-${run}`], txtype }, group: { members: [{ identity: org1!.org }] }, data: [{ value: { txtype } }] })
      expect(r.status, JSON.stringify(r.body)).to.equal(202)
      expect(r.body.header.txtype).to.equal('none')
      // Confirmed on the sender when it answers: no batch timeout, no pin.
      expect(r.body.state).to.equal('confirmed')
      const there = await messageReaching(org1!, ns, r.body.header.id, ['confirmed'], 60_000)
      expect(there.state).to.equal('confirmed')
      expect((await get(`${nsBase(org2!, ns)}/messages/${r.body.header.id}`)).status).to.equal(404)
      // Its batch was delivered, never pinned: no BatchPin event names it, on the sender or anywhere.
      const onSender = await get<ApiMessage & { batch?: string }>(`${nsBase(org0!, ns)}/messages/${r.body.header.id}`)
      const batchId = onSender.body.batch
      expect(batchId, 'batched').to.be.a('string')
      for (const m of [org0!, org1!, org2!]) {
        const events = await get<ApiChainEvent[]>(`${m.api}/api/v1/blockchainevents?batch=${batchId}`)
        expect(events.body, m.org).to.deep.equal([])
      }
    }
  })

  it('bad sends: no group, unknown member, a group of only the author, an unknown datatype: 400', async () => {
    const [org0] = members
    for (const body of [
      { data: [{ value: 1 }] },
      { group: { members: [{ identity: 'nobody' }] }, data: [{ value: 1 }] },
      { group: { members: [{ identity: org0!.org }] }, data: [{ value: 1 }] },
      { group: { members: [{ identity: members[1]!.org }] }, data: [{ value: 1, datatype: { name: `nope-${run}`, version: '1' } }] },
    ]) {
      const r = await sendPrivate(org0!, ns, body)
      expect(r.status, JSON.stringify(body)).to.equal(400)
    }
  })

  describe('deliveries refused by the receiver, nothing stored', () => {
    const forged = (author: MemberDescription, tamper: boolean): BatchPayload => {
      const created = now()
      const valueRaw = JSON.stringify({ forged: run })
      const d: Data = { id: newId<DataId>(), validator: 'json', namespace: ns, hash: dataHash({ valueRaw }), created, value: valueRaw }
      const topic = `tf-${run}`
      const header: Header = {
        id: newId<MessageId>(),
        type: 'private',
        txtype: 'batch_pin',
        author: author.did,
        key: author.key,
        created,
        namespace: ns,
        group,
        topics: [topic],
        datahash: dataRefsHash([{ id: d.id, hash: d.hash }]),
      }
      const pins = [formatPin(privatePin(topic, group, author.did, 0), 0)]
      const message = { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }], pins }
      const id = newId<BatchId>()
      const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
      const { hash } = sealManifest({ id, tx, messages: [message], data: [d] })
      const data = tamper ? [{ ...d, value: JSON.stringify({ forged: 'changed' }) }] : [d]
      return { id, type: 'private', namespace: ns, node: `did:firefly:node/${author.node}`, author: author.did, key: author.key, group, created, hash, tx, messages: [message], data }
    }
    const deliver = (as: MemberDescription, to: MemberDescription, b: BatchPayload) => {
      const L = layout(t.dir).member(as.org)
      return rawRequest(`${to.p2p}/api/v1/batches`, { cert: readFileSync(L.cert, 'utf8'), key: readFileSync(L.key, 'utf8') }, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: serializeBatch(b),
      })
    }

    it('a tampered batch (data changed after hashing) from the right peer is refused 400', async () => {
      const [org0, org1] = members
      const b = forged(org0!, true)
      const r = await deliver(org0!, org1!, b)
      expect(r.status, r.body).to.equal(400)
      expect(r.body).to.match(/BAD_PEER_DATA/)
      expect((await get(`${nsBase(org1!, ns)}/messages/${b.messages[0]!.header.id}`)).status).to.equal(404)
      expect((await get(`${nsBase(org1!, ns)}/batches/${b.id}`)).status).to.equal(404)
    })

    it('a registered peer delivering a batch authored by another org is refused 400', async () => {
      const [org0, org1, org2] = members
      const b = forged(org0!, false)
      const r = await deliver(org2!, org1!, b)
      expect(r.status, r.body).to.equal(400)
      expect(r.body).to.match(/BAD_PEER_DATA/)
      expect((await get(`${nsBase(org1!, ns)}/messages/${b.messages[0]!.header.id}`)).status).to.equal(404)
    })
  })
})
