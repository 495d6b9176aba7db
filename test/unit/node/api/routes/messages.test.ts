import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { Data, Header, Message } from '../../../../../node/model/index.js'

/**
 * Two messages held under one id (a member sent one of its own under another's id), through the real server: the id
 * alone names the confirmed one, `?hash=` either, lists show both, and a message's data is read by id and hash.
 */
describe('messages sharing an id: API', () => {
  const t = apiSuite('parley-messages-api-', (r) => ({
    query: { messages: r.messages, data: r.data, events: { list: (q: Parameters<typeof r.events.list>[0]) => r.events.list(q) } },
  }))

  function item(id: DataId, value: string): Data {
    return { id, validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value }
  }
  function message(id: MessageId, d: Data, topic: string): Message {
    const refs = [{ id: d.id, hash: d.hash }]
    const header: Header = { id, type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: [topic], datahash: dataRefsHash(refs) }
    return { header, hash: messageHash(header), state: 'pending', data: refs }
  }
  const get = async (path: string, status = 200) => {
    const res = await localCall(t.port, 'GET', `/api/v1/namespaces/default${path}`)
    expect(res.status, res.text).to.equal(status)
    return res.json as Record<string, unknown> & { hash: string; state: string; data: { value: unknown }[] }
  }

  it('answers the confirmed one by id, either by ?hash=, both in a list, each with its own data', async () => {
    const [id, dataId] = [newId<MessageId>(), newId<DataId>()]
    const [real, forged] = [item(dataId, '{"pay":10}'), item(dataId, '{"pay":10000}')]
    const [first, second] = [message(id, forged, 'squat'), message(id, real, 'orders')]
    const r = t.repos
    await r.db.transaction((tx) => {
      r.data.insertMany(tx, [forged, real], false)
      r.messages.insertMany(tx, [first, second], false)
      r.messages.confirmMany(tx, [{ id, hash: second.hash, pinSeq: 5 }], newId<BatchId>(), newId<TxId>(), now())
      r.messages.reject(tx, { id, hash: first.hash }, newId<BatchId>(), newId<TxId>(), now(), 'taken', 9)
      r.events.insertMany(tx, [
        { type: 'message_confirmed', namespace: 'default', reference: id, referenceHash: second.hash },
        { type: 'message_rejected', namespace: 'default', reference: id, referenceHash: first.hash },
      ], now())
    })
    const byId = await get(`/messages/${id}?fetchdata=true`)
    expect([byId.hash, byId.state, byId.data[0]!.value]).to.deep.equal([second.hash, 'confirmed', { pay: 10 }])
    const byHash = await get(`/messages/${id}?hash=${first.hash}&fetchdata=true`)
    expect([byHash.hash, byHash.state, byHash.data[0]!.value]).to.deep.equal([first.hash, 'rejected', { pay: 10000 }])
    expect(((await get(`/messages/${id}/data?hash=${first.hash}`)) as unknown as { value: unknown }[]).map((d) => d.value)).to.deep.equal([{ pay: 10000 }])
    expect(((await get(`/messages/${id}/events?hash=${first.hash}`)) as unknown as { type: string }[]).map((e) => e.type)).to.deep.equal(['message_rejected'])
    expect(((await get(`/messages?id=${id}`)) as unknown as { hash: string }[]).map((m) => m.hash).sort()).to.deep.equal([first.hash, second.hash].sort())
    expect((await get(`/data/${dataId}`)).value, 'the data item a confirmed message carries').to.deep.equal({ pay: 10 })
    await get(`/messages/${id}?hash=${'0'.repeat(64)}`, 404)
    expect((await get(`/messages/${id}?hash=nothex`, 400)).error).to.match(/hash/)
  })
})
