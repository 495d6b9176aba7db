import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { Data, Header, Message } from '../../../../../node/model/index.js'
import { createEventEnricher } from '../../../../../node/events/index.js'
import { dataDigests } from '../../../../../node/data/digests.js'
import { withDigest } from '../../../../support/repos.js'

/** `GET events?fetchreferences=true&fetchdigests=true` (Parley-only): each message's data with its digests. */
describe('events API: fetchdigests', () => {
  const t = apiSuite('parley-events-api-', (r) => ({
    config: { chain: { contract: '0x' + '00'.repeat(20) } },
    query: {
      events: { list: (q: Parameters<typeof r.events.list>[0]) => r.events.list(q), enrich: createEventEnricher({ messages: r.messages, datatypes: r.datatypes, identities: r.identities, transactions: r.transactions, blockchainEvents: r.blockchainEvents }) },
      dataDigests: (list: readonly Message[]) => dataDigests(list, (refs) => r.data.byRefs(refs)),
    },
  }))

  it('lists FireFly’s data references without the flag and the digests with it', async () => {
    const d: Data = withDigest({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: '7' }), created: now(), value: '7', datatype: { name: 'n', version: '1' } })
    const refs = [{ id: d.id, hash: d.hash, digest: d.digest! }]
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org1', key: '0x' + 'bb'.repeat(20), created: now(), namespace: 'default', topics: ['T'], datahash: dataRefsHash(refs) }
    const m: Message = { header, hash: messageHash(header), state: 'pending', data: refs }
    const r = t.repos
    await r.db.transaction((tx) => {
      r.data.insertMany(tx, [d], false)
      r.messages.insertMany(tx, [m], false)
      r.messages.confirmMany(tx, [{ id: header.id, hash: m.hash, pinSeq: 1 }], newId<BatchId>(), newId<TxId>(), now())
      r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'default', reference: header.id, referenceHash: m.hash }], now())
    })
    const page = async (query: string) => {
      const res = await localCall(t.port, 'GET', `/api/v1/namespaces/default/events?type=message_confirmed&fetchreferences=true${query}`)
      expect(res.status, res.text).to.equal(200)
      return (res.json as { message: { data: unknown[] } }[])[0]!.message.data
    }
    expect(await page('')).to.deep.equal([{ id: d.id, hash: d.hash }])
    expect(await page('&fetchdigests=true')).to.deep.equal([{ id: d.id, hash: d.hash, digest: d.digest }])
  })
})
