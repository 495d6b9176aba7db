import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { timestampSortKey } from '../../node/core/time.js'
import { POSTGRES_MEMBER, sharedNetwork } from '../support/shared-network.js'
import {
  broadcast,
  byTopic,
  confirmationOrder,
  get,
  messageReaching,
  nsBase,
  pinOrder,
  plain,
  request,
  runId,
  send,
  sha256,
  waitConfirmedAll,
  type ApiData,
  type ApiMessage,
} from '../support/api.js'
import { chainOrder } from '../support/chain-order.js'
import { waitUntil } from '../support/wait.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const HASH_RE = /^[0-9a-f]{64}$/

describe('broadcast on a real 3-member network', function () {
  this.timeout(120_000)
  const t = sharedNetwork()
  const { members } = t
  const run = runId()

  /** Polls a member until it holds the message confirmed; answers it. */
  const confirmedOn = (m: MemberDescription, ns: string, id: string): Promise<ApiMessage> => messageReaching(m, ns, id, ['confirmed'], 30_000)

  describe('send', () => {
    it('answers 202 with the accepted message: broadcast, batch_pin, ready, hashes, default topic and author', async () => {
      const m = members[0]!
      const ns = `send-${run}`
      // The values' text as sent, with spaces: each is hashed compacted, exactly as received (keys in their order,
      // 2.50 as written), and with Go's HTML escaping of <, > and &.
      const body = `{"header":{"tag":"greeting"},"data":[{"value": { "b" : [1, 2.50, "x"], "a" : "héllo" } }, {"value": "a<b>&c"}]}`
      const r = await broadcast(m, ns, body)
      expect(r.status).to.equal(202)
      expect(r.contentType).to.match(/application\/json/)
      const msg = r.body
      expect(msg.header.id).to.match(UUID_RE)
      expect(msg.header.type).to.equal('broadcast')
      expect(msg.header.txtype).to.equal('batch_pin')
      expect(msg.header.author).to.equal(m.did)
      expect(msg.header.key).to.equal(m.key)
      expect(msg.header.namespace).to.equal(ns)
      expect(msg.header.topics, 'the default topic is the namespace name').to.deep.equal([ns])
      expect(msg.header.tag).to.equal('greeting')
      expect(msg.state).to.equal('ready')
      expect(msg.hash).to.match(HASH_RE)
      expect(msg.header.datahash).to.match(HASH_RE)
      expect(msg.data).to.have.length(2)
      expect(msg.data[0]!.id).to.match(UUID_RE)
      expect(msg.data[0]!.hash, 'the data hash covers the compacted value text').to.equal(sha256('{"b":[1,2.50,"x"],"a":"héllo"}'))
      expect(msg.data[1]!.hash, 'Go escapes <, > and & before hashing').to.equal(sha256('"a\\u003cb\\u003e\\u0026c"'))
      expect(msg.header.datahash).to.equal(sha256(JSON.stringify(msg.data.map((d) => ({ id: d.id, hash: d.hash })))))
      expect(msg.confirmed).to.equal(undefined)

      // It reaches every member, the same message with the same data.
      for (const other of members) {
        const got = await confirmedOn(other, ns, msg.header.id)
        expect(got.hash, other.org).to.equal(msg.hash)
        expect(got.header, other.org).to.deep.include({ author: m.did, key: m.key, topics: [ns], datahash: msg.header.datahash, created: msg.header.created })
        const data = await get<ApiData[]>(`${nsBase(other, ns)}/messages/${msg.header.id}/data`)
        expect(data.body.map((d) => d.value), other.org).to.deep.equal([{ b: [1, 2.5, 'x'], a: 'héllo' }, 'a<b>&c'])
        expect(data.body.map((d) => d.hash), other.org).to.deep.equal(msg.data.map((d) => d.hash))
      }
    })

    it('the default namespace lives at /api/v1 too, with the topic "default"', async () => {
      const m = members[1]!
      const r = await request<ApiMessage>('POST', `${m.api}/api/v1/messages/broadcast`, { data: [{ value: `plain-${run}` }] })
      expect(r.status).to.equal(202)
      expect(r.body.header.namespace).to.equal('default')
      expect(r.body.header.topics).to.deep.equal(['default'])
      const viaNs = await get<ApiMessage>(`${nsBase(m, 'default')}/messages/${r.body.header.id}`)
      expect(viaNs.status).to.equal(200)
      for (const other of members) await confirmedOn(other, 'default', r.body.header.id)
    })

    it('?confirm=true answers 200 once the message is confirmed locally', async () => {
      const m = members[2]!
      const ns = `confirm-${run}`
      const r = await broadcast(m, ns, { header: { topics: [`c-${run}`] }, data: [{ value: { n: 1 } }] }, { confirm: true })
      expect(r.status).to.equal(200)
      expect(r.body.state).to.equal('confirmed')
      expect(r.body.confirmed).to.be.a('string')
      expect(r.body.batch).to.match(UUID_RE)
      const local = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${r.body.header.id}`)
      expect(local.body.state, 'already confirmed when the 200 came').to.equal('confirmed')
    })

    it('any namespace name works on every member, without configuration', async () => {
      const sent: { ns: string; id: string }[] = []
      for (const [i, m] of members.entries()) {
        const ns = `any.${run}_${i}-Ns`
        const r = await broadcast(m, ns, { data: [{ value: i }] }, { confirm: true })
        expect(r.status, `${m.org} in ${ns}: ${JSON.stringify(r.body)}`).to.equal(200)
        sent.push({ ns, id: r.body.header.id })
      }
      for (const s of sent) {
        for (const other of members) {
          const got = await confirmedOn(other, s.ns, s.id)
          expect(got.header.namespace).to.equal(s.ns)
          // Namespaces are apart: the message is not found under another one.
          const elsewhere = await get<{ error: string }>(`${nsBase(other, `other-${run}`)}/messages/${s.id}`)
          expect(elsewhere.status).to.equal(404)
        }
      }
    })
  })

  describe('ordering', () => {
    it('runs across both engines: org1 keeps its state in PostgreSQL, org0 and org2 in sql.js', async () => {
      // What makes every ordering, private, events and data suite on the shared network a check of both engines.
      const engines = await Promise.all(members.map(async (m) => (await get<{ database: { engine: string } }>(`${m.api}/api/v1/status`)).body.database.engine))
      expect(engines).to.deep.equal(members.map((m) => (m.org === POSTGRES_MEMBER ? 'postgres' : 'sqljs')))
    })

    it('two members broadcast 50 messages each on alternating topics: every member confirms all 100 in the on-chain pin order', async () => {
      const ns = `order-${run}`
      const topics = [`topicA-${run}`, `topicB-${run}`]
      const senders = [members[0]!, members[1]!]
      const topicOf = new Map<string, string>()
      const sentBy = new Map<string, string[]>()
      // Each sender sends in sequence (202 before the next); the two senders run at the same time.
      await Promise.all(
        senders.map(async (m) => {
          const ids: string[] = []
          for (let i = 0; i < 50; i++) {
            const topic = topics[i % 2]!
            const msg = await send(m, ns, topic, { from: m.org, i })
            topicOf.set(msg.header.id, topic)
            ids.push(msg.header.id)
          }
          sentBy.set(m.org, ids)
        }),
      )
      expect(topicOf.size).to.equal(100)

      await Promise.all(members.map((m) => waitConfirmedAll(m, ns, topicOf.keys())))

      // The order as the chain has it (its logs, and the batches they name on IPFS), not as a member reports it.
      const { order: onChain, batches } = await chainOrder(t.net.description, topicOf)
      expect([...onChain.values()].flat(), 'every message pinned exactly once').to.have.length(100)
      for (const m of members) {
        const confirmed = await confirmationOrder(m, ns, topicOf)
        expect(plain(confirmed), `${m.org}: confirmation order per topic equals the pin order`).to.deep.equal(plain(onChain))
        // Every member read the chain as it is.
        const own = await pinOrder(m, ns, topicOf)
        expect(plain(own.order), `${m.org}: pin order as this member read it`).to.deep.equal(plain(onChain))
      }

      // A sender's messages keep its send order on each topic.
      for (const [org, ids] of sentBy) {
        for (const [topic, expected] of byTopic(ids, topicOf)) {
          expect(onChain.get(topic)!.filter((id) => expected.includes(id)), `${org} on ${topic}`).to.deep.equal(expected)
        }
      }

      // Batching: fewer pins than messages; one pinBatch per batch whose contexts are sha256(topic) per message.
      expect(batches.length, 'messages were batched').to.be.lessThan(100)
      for (const { pin, batch } of batches) {
        const contexts = batch.payload.messages.flatMap((m) => m.header.topics.map((topic) => '0x' + sha256(topic)))
        expect(pin.contexts, `contexts of batch ${batch.id}`).to.deep.equal(contexts)
      }
      // The batch every member holds is the one the sender sealed and pinned (same manifest hash).
      const some = batches[0]!.pin
      for (const m of members) {
        const b = await get<{ hash: string; state: string }>(`${nsBase(m, ns)}/batches/${some.batchId}`)
        expect('0x' + b.body.hash, m.org).to.equal(some.batchHash)
        expect(b.body.state, m.org).to.be.oneOf(['pinned', 'received'])
      }
    })
  })

  describe('reads', () => {
    const ns = `reads-${run}`
    const topic = `r-${run}`
    const sent: ApiMessage[] = []

    before(async () => {
      // Confirmed one after another, so each has its own confirmation time.
      for (let i = 0; i < 3; i++) {
        const r = await broadcast(members[0]!, ns, { header: { topics: [topic], tag: `t${i}` }, data: [{ value: { i } }, { value: `second ${i}` }] }, { confirm: true })
        expect(r.status).to.equal(200)
        sent.push(r.body)
      }
      await Promise.all(members.map((m) => waitConfirmedAll(m, ns, sent.map((s) => s.header.id))))
    })

    it('GET /messages/{id} gives references, ?fetchdata=true and ?data=true the values, on every member', async () => {
      const msg = sent[1]!
      for (const m of members) {
        const plainRead = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${msg.header.id}`)
        expect(plainRead.status).to.equal(200)
        expect(plainRead.body.data).to.deep.equal(msg.data)
        expect(plainRead.body.pins, `${m.org}: pins on a queried broadcast are sha256(topic)`).to.deep.equal([sha256(topic)])
        expect(plainRead.body.header.topic, `${m.org}: the topic alias`).to.deep.equal([topic])
        expect(plainRead.body.state).to.equal('confirmed')
        expect(plainRead.body.batch).to.match(UUID_RE)
        for (const flag of ['fetchdata=true', 'fetchdata', 'data=true']) {
          const full = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${msg.header.id}?${flag}`)
          expect(full.status).to.equal(200)
          expect(full.body.data.map((d) => ({ id: d.id, hash: d.hash, value: d.value })), `${m.org} ?${flag}`).to.deep.equal([
            { id: msg.data[0]!.id, hash: msg.data[0]!.hash, value: { i: 1 } },
            { id: msg.data[1]!.id, hash: msg.data[1]!.hash, value: 'second 1' },
          ])
        }
        const data = await get<ApiData[]>(`${nsBase(m, ns)}/messages/${msg.header.id}/data`)
        expect(data.status).to.equal(200)
        expect(data.body.map((d) => [d.id, d.hash, d.namespace, d.validator, d.value])).to.deep.equal([
          [msg.data[0]!.id, msg.data[0]!.hash, ns, 'json', { i: 1 }],
          [msg.data[1]!.id, msg.data[1]!.hash, ns, 'json', 'second 1'],
        ])
        expect(data.body[0]!.hash).to.equal(sha256('{"i":1}'))
      }
    })

    it("a message's txid leads to its batch_pin transaction on every member, with the chain transaction that pinned it; the sender's operations record the upload and the pin", async () => {
      const msg = sent[0]!
      const sender = members[0]!
      const onSender = await get<ApiMessage>(`${nsBase(sender, ns)}/messages/${msg.header.id}`)
      const txid = onSender.body.txid!
      expect(txid).to.match(UUID_RE)
      const chainEvents = await get<{ tx: { id: string; blockchainId: string } }[]>(`${sender.api}/api/v1/namespaces/${ns}/blockchainevents?batch=${onSender.body.batch}`)
      const chainTx = chainEvents.body[0]!.tx.blockchainId
      for (const m of members) {
        const t = await get<{ id: string; namespace: string; type: string; created: string; blockchainIds: string[] }>(`${nsBase(m, ns)}/transactions/${txid}`)
        expect(t.status, m.org).to.equal(200)
        expect(t.body, m.org).to.deep.include({ id: txid, namespace: ns, type: 'batch_pin', blockchainIds: [chainTx] })
        expect((await get(`${nsBase(m, ns)}/messages/${msg.header.id}/transaction`)).body, m.org).to.deep.equal(t.body)
      }
      type Op = { type: string; status: string; plugin: string; input: Record<string, unknown>; output?: Record<string, unknown> }
      const ops = async () => (await get<Op[]>(`${nsBase(sender, ns)}/transactions/${txid}/operations`)).body
      // The pin is recorded when its receipt comes, which may follow the confirmation its log brought.
      await waitUntil('the pin recorded on the sender', async () => (await ops()).every((o) => o.status === 'Succeeded'), { timeoutMs: 30_000 })
      const recorded = await ops()
      const batch = await get<{ payloadRef: string }>(`${nsBase(sender, ns)}/batches/${onSender.body.batch}`)
      expect(recorded.map((o) => [o.type, o.plugin]).sort()).to.deep.equal([
        ['blockchain_pin_batch', 'ethereum'],
        ['sharedstorage_upload_batch', 'ipfs'],
      ])
      expect(recorded.find((o) => o.type === 'blockchain_pin_batch')!.output).to.deep.equal({ transactionHash: chainTx })
      expect(recorded.find((o) => o.type === 'sharedstorage_upload_batch')!.output).to.deep.equal({ payloadRef: batch.body.payloadRef })
      // Only the member that ran the steps has them.
      expect((await get(`${nsBase(members[1]!, ns)}/transactions/${txid}/operations`)).body).to.deep.equal([])
    })

    it('GET /messages: pins and topic alias, pending=false only confirmed, natural order, filters', async () => {
      for (const m of members) {
        const all = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?limit=100`)
        expect(all.status).to.equal(200)
        expect(all.body.map((x) => x.header.id), `${m.org}: newest confirmed first`).to.deep.equal(
          [...all.body].sort((a, b) => timestampSortKey(b.confirmed!).localeCompare(timestampSortKey(a.confirmed!))).map((x) => x.header.id),
        )
        expect(all.body.map((x) => x.header.id)).to.have.members(sent.map((s) => s.header.id))
        for (const x of all.body) {
          expect(x.pins).to.deep.equal([sha256(topic)])
          expect(x.header.topic).to.deep.equal([topic])
        }
        const confirmed = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?pending=false&limit=100`)
        expect(confirmed.body.every((x) => x.state === 'confirmed')).to.equal(true)
        expect(confirmed.body).to.have.length(3)
        const pending = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?pending=true`)
        expect(pending.body).to.deep.equal([])
        const tagged = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?tag=t2`)
        expect(tagged.body.map((x) => x.header.id)).to.deep.equal([sent[2]!.header.id])
        const onTopic = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?topics=@${topic.slice(2)}&limit=2&skip=1`)
        expect(onTopic.body.map((x) => x.header.id), `${m.org}: limit and skip in natural order`).to.deep.equal(all.body.slice(1, 3).map((x) => x.header.id))
      }
    })

    it('the natural order puts pending messages first, newest created first, then confirmed newest first', async () => {
      const m = members[2]!
      const nsMix = `mix-${run}`
      for (let i = 0; i < 2; i++) await broadcast(m, nsMix, { data: [{ value: i }] }, { confirm: true })
      // The sender stops reading the chain, so its next three stay pending (their pins go out, unread) while it is asked.
      await t.net.holdReading(m.org, 'chain')
      let list: ApiMessage[]
      const pendingIds: string[] = []
      try {
        for (let i = 0; i < 3; i++) pendingIds.push((await send(m, nsMix, `mix-${run}`, i)).header.id)
        list = (await get<ApiMessage[]>(`${nsBase(m, nsMix)}/messages?limit=100`)).body
      } finally {
        await t.net.releaseReading(m.org, 'chain')
      }
      expect(list).to.have.length(5)
      const firstConfirmed = list.findIndex((x) => x.state === 'confirmed')
      const pendingPart = firstConfirmed < 0 ? list : list.slice(0, firstConfirmed)
      const confirmedPart = firstConfirmed < 0 ? [] : list.slice(firstConfirmed)
      expect(pendingPart.map((x) => x.header.id), 'the three unconfirmed come first').to.have.members(pendingIds)
      expect(pendingPart.every((x) => x.state !== 'confirmed')).to.equal(true)
      expect(confirmedPart.every((x) => x.state === 'confirmed'), 'no pending message after a confirmed one').to.equal(true)
      const created = pendingPart.map((x) => timestampSortKey(x.header.created))
      expect(created, 'pending: newest created first').to.deep.equal([...created].sort().reverse())
      const confirmedAt = confirmedPart.map((x) => timestampSortKey(x.confirmed!))
      expect(confirmedAt, 'confirmed: newest confirmed first').to.deep.equal([...confirmedAt].sort().reverse())
      expect(confirmedPart).to.have.length(2)
    })

    it('unknown ids answer 404 and malformed ids 400, with the JSON error body', async () => {
      const m = members[0]!
      const unknown = '8e0e2b0a-1f1f-4c4c-9d9d-0123456789ab'
      for (const path of [`messages/${unknown}`, `messages/${unknown}/data`, `batches/${unknown}`]) {
        const r = await get<{ error: string }>(`${nsBase(m, ns)}/${path}`)
        expect(r.status, path).to.equal(404)
        expect(r.contentType).to.match(/application\/json/)
        expect(r.body.error, path).to.match(/^NOT_FOUND: /)
      }
      for (const path of ['messages/not-a-uuid', 'messages/1234/data', 'batches/xyz', `messages/${unknown}x`]) {
        const r = await get<{ error: string }>(`${nsBase(m, ns)}/${path}`)
        expect(r.status, path).to.equal(400)
        expect(r.body.error, path).to.match(/^INVALID_ID: /)
      }
      // A message of another namespace is not found here.
      const r = await get<{ error: string }>(`${nsBase(m, `elsewhere-${run}`)}/messages/${sent[0]!.header.id}`)
      expect(r.status).to.equal(404)
    })
  })

  describe('bad requests', () => {
    const ns = `bad-${run}`
    const cases: { what: string; body: unknown; headers?: Record<string, string>; status: number; code: RegExp }[] = [
      { what: 'not JSON', body: '{"data": [', status: 400, code: /^INVALID_JSON: / },
      { what: 'an empty body', body: '', status: 400, code: /^INVALID_JSON: / },
      { what: 'a JSON array', body: '[]', status: 400, code: /^INVALID_FIELD: / },
      { what: 'no data', body: { header: { tag: 'x' } }, status: 400, code: /^INVALID_FIELD: data is required/ },
      { what: 'empty data', body: { data: [] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'data not an array', body: { data: { value: 1 } }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a data item without a value', body: { data: [{}] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a null value', body: { data: [{ value: null }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a topic with a space', body: { header: { topics: ['a b'] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: topic/ },
      { what: 'a topic starting with -', body: { header: { topics: ['-a'] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: topic/ },
      { what: 'a 65-character topic', body: { header: { topics: ['a'.repeat(65)] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: topic/ },
      { what: 'an empty topic', body: { header: { topics: [''] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a topic that is not a string', body: { header: { topics: [7] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a duplicate topic', body: { header: { topics: ['a', 'a'] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: / },
      {
        what: '11 topics',
        body: { header: { topics: Array.from({ length: 11 }, (_, i) => `t${i}`) }, data: [{ value: 1 }] },
        status: 400,
        code: /^INVALID_FIELD: header.topics has 11 topics/,
      },
      { what: 'a bad tag', body: { header: { tag: 'no spaces please' }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: header.tag/ },
      { what: 'header.type definition', body: { header: { type: 'definition' }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: header.type/ },
      { what: 'header.type groupinit', body: { header: { type: 'groupinit' }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: header.type/ },
      { what: 'header.id', body: { header: { id: '8e0e2b0a-1f1f-4c4c-9d9d-0123456789ab' }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: header.id/ },
      { what: 'header.datahash', body: { header: { datahash: 'ab'.repeat(32) }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a group on a broadcast', body: { group: { members: [{ identity: 'org1' }] }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'txtype none', body: { header: { txtype: 'none' }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'another org as author', body: { header: { author: 'did:firefly:org/org1' }, data: [{ value: 1 }] }, status: 400, code: /^INVALID_FIELD: author/ },
      { what: 'a data id that does not exist', body: { data: [{ id: '8e0e2b0a-1f1f-4c4c-9d9d-0123456789ab' }] }, status: 400, code: /^INVALID_FIELD: / },
      { what: 'a malformed data id', body: { data: [{ id: 'nope' }] }, status: 400, code: /^INVALID_ID: / },
      { what: 'an XML content type', body: '<data/>', headers: { 'content-type': 'application/xml' }, status: 415, code: /^UNSUPPORTED_MEDIA_TYPE: / },
      { what: 'a form content type', body: 'data=1', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: /^UNSUPPORTED_MEDIA_TYPE: / },
    ]

    it('answers every malformed broadcast with a 4xx and a JSON error, and stores nothing', async () => {
      const m = members[0]!
      for (const c of cases) {
        const r = await request<{ error: string }>('POST', `${nsBase(m, ns)}/messages/broadcast`, c.body, c.headers)
        expect(r.status, `${c.what}: ${JSON.stringify(r.body)}`).to.equal(c.status)
        expect(r.contentType, c.what).to.match(/application\/json/)
        expect(r.body.error, c.what).to.be.a('string').and.match(c.code)
      }
      const stored = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?limit=100`)
      expect(stored.body, 'nothing was stored for the refused requests').to.deep.equal([])
      // The node is unharmed.
      const ok = await broadcast(m, ns, { data: [{ value: 'still fine' }] }, { confirm: true })
      expect(ok.status).to.equal(200)
    })

    it('a malformed namespace is a 400; a bad query parameter is a 400', async () => {
      const m = members[0]!
      const r = await request<{ error: string }>('POST', `${m.api}/api/v1/namespaces/-bad-/messages/broadcast`, { data: [{ value: 1 }] })
      expect(r.status).to.equal(400)
      expect(r.body.error).to.match(/^INVALID_FIELD: namespace/)
      const c = await request<{ error: string }>('POST', `${nsBase(m, ns)}/messages/broadcast?confirm=maybe`, { data: [{ value: 1 }] })
      expect(c.status).to.equal(400)
      for (const q of ['limit=0', 'limit=abc', 'skip=-1', 'pending=perhaps', 'nosuchfield=1']) {
        const l = await get<{ error: string }>(`${nsBase(m, ns)}/messages?${q}`)
        expect(l.status, q).to.equal(400)
        expect(l.body.error, q).to.be.a('string')
      }
    })

    it('an idempotencyKey used twice answers 409 the second time', async () => {
      const m = members[1]!
      const key = `idem-${run}`
      const first = await broadcast(m, ns, { idempotencyKey: key, data: [{ value: 1 }] })
      expect(first.status).to.equal(202)
      expect(first.body.idempotencyKey).to.equal(key)
      const again = await broadcast(m, ns, { idempotencyKey: key, data: [{ value: 2 }] })
      expect(again.status).to.equal(409)
      expect(again.body as unknown as { error: string }).to.have.property('error').that.matches(/^CONFLICT: .*already used for message/)
      // Concurrent requests with one fresh key: exactly one is accepted.
      const key2 = `idem2-${run}`
      const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => broadcast(m, ns, { idempotencyKey: key2, data: [{ value: i }] })))
      expect(racing.map((x) => x.status).sort()).to.deep.equal([202, 409, 409, 409, 409, 409, 409, 409])
      // The same key in another namespace is a different key.
      const otherNs = await broadcast(m, `${ns}-2`, { idempotencyKey: key, data: [{ value: 3 }] })
      expect(otherNs.status).to.equal(202)
      const stored = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?idempotencykey=${key}`)
      expect(stored.body.map((x) => x.header.id)).to.deep.equal([first.body.header.id])
    })
  })
})
