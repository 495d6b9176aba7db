import { expect } from 'chai'
import { join } from 'node:path'
import { localCall } from '../../../../support/local-http.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../../support/repos.js'
import { MemoryStorage } from '../../../../support/storage.js'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import type { NodeServices } from '../../../../../node/services.js'
import { freePort } from '../../../../../network/process.js'
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
  const temp = new TempDirs()
  let r: Repos
  let api: ApiServer
  let port: number
  let storage: MemoryStorage
  const logs: string[] = []

  async function stored(value: string): Promise<Data> {
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: CREATED, value }
    await r.db.transaction((tx) => r.data.insert(tx, d))
    return d
  }

  before(async () => {
    const dir = await temp.make('parley-data-api-')
    r = await openRepos(join(dir, 'db'))
    const blobStore = await BlobStore.open(join(dir, 'blobs'))
    storage = new MemoryStorage()
    const services = {
      config: { limits: DEFAULT_REQUEST_LIMITS },
      query: { data: r.data },
      publisher: new DataPublisher({ db: r.db, data: r.data, refs: r.refs, blobs: r.blobs, transactions: r.transactions, operations: r.operations, blobStore, storage }),
      dataRemover: new DataRemover({ db: r.db, data: r.data, blobs: r.blobs }),
    } as unknown as NodeServices
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
  })
  after(async () => {
    await api.close()
    await r.db.close()
    await temp.cleanup()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  it("value/publish answers FireFly's Data with `public` between the value and the blob, with or without a body", async () => {
    const d = await stored('{"x":1}')
    const res = await localCall(port, 'POST', `/api/v1/namespaces/default/data/${d.id}/value/publish`)
    expect(res.status, res.text).to.equal(200)
    const ref = storage.uploaded.at(-1)!.ref
    expect(res.text).to.equal(`{"id":"${d.id}","validator":"json","namespace":"default","hash":"${d.hash}","created":"${CREATED}","value":{"x":1},"public":"${ref}"}`)
    expect((await localCall(port, 'GET', `/api/v1/data/${d.id}`)).json).to.have.property('public', ref)
    const again = await localCall(port, 'POST', `/api/v1/data/${d.id}/value/publish`, { idempotencyKey: 'once' })
    expect(again.status).to.equal(200)
    const conflict = await localCall(port, 'POST', `/api/v1/data/${d.id}/value/publish`, { idempotencyKey: 'once' })
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
      const res = await localCall(port, 'POST', path, body)
      expect(res.status, `${path} ${JSON.stringify(body)}: ${res.text}`).to.equal(status)
      expect(res.json).to.have.property('error')
    }
  })

  it('DELETE answers 204 for data no message carries, 409 for data a message carries, 404 after', async () => {
    const loose = await stored('{"z":3}')
    const del = await localCall(port, 'DELETE', `/api/v1/namespaces/default/data/${loose.id}`)
    expect(del.status, del.text).to.equal(204)
    expect(del.text).to.equal('')
    expect((await localCall(port, 'GET', `/api/v1/data/${loose.id}`)).status).to.equal(404)
    expect((await localCall(port, 'DELETE', `/api/v1/data/${loose.id}`)).status).to.equal(404)

    const held = await stored('{"w":4}')
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: CREATED, namespace: 'default', topics: ['t'], datahash: dataRefsHash([{ id: held.id, hash: held.hash }]) }
    await r.db.transaction((tx) => r.messages.insert(tx, { header, hash: messageHash(header), state: 'ready', data: [{ id: held.id, hash: held.hash }] }, true))
    const refused = await localCall(port, 'DELETE', `/api/v1/data/${held.id}`)
    expect(refused.status, refused.text).to.equal(409)
    expect((refused.json as { error: string }).error).to.contain(header.id)
  })
})
