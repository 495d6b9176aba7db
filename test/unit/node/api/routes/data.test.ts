import { expect } from 'chai'
import { join } from 'node:path'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import { MemoryStorage } from '../../../../support/storage.js'
import { BlobStore } from '../../../../../node/data/blob-store.js'
import { DataPublisher } from '../../../../../node/data/publish.js'
import { DataRemover } from '../../../../../node/data/delete.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type DataId, type MessageId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import type { Data, Header } from '../../../../../node/model/index.js'

const CREATED = '2024-01-01T00:00:01Z' as Timestamp

/** The data routes that publish and delete, through the real server, over a real database and blob store. */
describe('data: publish and delete API', () => {
  const storage = new MemoryStorage()
  const t = apiSuite('parley-data-api-', async (r, dir) => ({
    query: { data: r.data },
    publisher: new DataPublisher({ db: r.db, data: r.data, refs: r.refs, blobs: r.blobs, transactions: r.transactions, operations: r.operations, blobStore: await BlobStore.open(join(dir, 'blobs')), storage }),
    dataRemover: new DataRemover({ db: r.db, data: r.data, blobs: r.blobs }),
  }))
  const call = (method: string, path: string, body?: unknown) => localCall(t.port, method, path, body)

  async function stored(value: string): Promise<Data> {
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: CREATED, value }
    await t.repos.db.transaction((tx) => t.repos.data.insert(tx, d, true))
    return d
  }

  it("value/publish answers FireFly's Data with `public` between the value and the blob, with or without a body", async () => {
    const d = await stored('{"x":1}')
    const res = await call('POST', `/api/v1/namespaces/default/data/${d.id}/value/publish`)
    expect(res.status, res.text).to.equal(200)
    const ref = storage.uploaded.at(-1)!.ref
    expect(res.text).to.equal(`{"id":"${d.id}","validator":"json","namespace":"default","hash":"${d.hash}","created":"${CREATED}","value":{"x":1},"public":"${ref}"}`)
    expect((await call('GET', `/api/v1/data/${d.id}`)).json).to.have.property('public', ref)
    const again = await call('POST', `/api/v1/data/${d.id}/value/publish`, { idempotencyKey: 'once' })
    expect(again.status).to.equal(200)
    const conflict = await call('POST', `/api/v1/data/${d.id}/value/publish`, { idempotencyKey: 'once' })
    expect(conflict.status, conflict.text).to.equal(409)
  })

  it('refuses a malformed publish body, an unknown or malformed id, and a blob publish of a value', async () => {
    const d = await stored('{"y":2}')
    for (const [path, body, status] of [
      [`/api/v1/data/${d.id}/value/publish`, [], 400],
      [`/api/v1/data/${d.id}/value/publish`, { idempotencyKey: 5 }, 400],
      [`/api/v1/data/${d.id}/value/publish`, '{', 400],
      [`/api/v1/data/${newId<DataId>()}/value/publish`, {}, 404],
      ['/api/v1/data/nope/value/publish', {}, 400],
      [`/api/v1/data/${d.id}/blob/publish`, {}, 400],
    ] as const) {
      const res = await call('POST', path, body)
      expect(res.status, `${path} ${JSON.stringify(body)}: ${res.text}`).to.equal(status)
      expect(res.json).to.have.property('error')
    }
  })

  it('DELETE answers 204 for data no message carries, 409 for data a message carries, 404 after', async () => {
    const loose = await stored('{"z":3}')
    const del = await call('DELETE', `/api/v1/namespaces/default/data/${loose.id}`)
    expect(del.status, del.text).to.equal(204)
    expect(del.text).to.equal('')
    expect((await call('GET', `/api/v1/data/${loose.id}`)).status).to.equal(404)
    expect((await call('DELETE', `/api/v1/data/${loose.id}`)).status).to.equal(404)

    const held = await stored('{"w":4}')
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: CREATED, namespace: 'default', topics: ['t'], datahash: dataRefsHash([{ id: held.id, hash: held.hash }]) }
    await t.repos.db.transaction((tx) => t.repos.messages.insert(tx, { header, hash: messageHash(header), state: 'ready', data: [{ id: held.id, hash: held.hash }] }, true))
    const refused = await call('DELETE', `/api/v1/data/${held.id}`)
    expect(refused.status, refused.text).to.equal(409)
    expect((refused.json as { error: string }).error).to.contain(header.id)
  })
})
