import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { DataRemover } from '../../../../node/data/delete.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { newId, type DataId, type Hash, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Data, Header, Message } from '../../../../node/model/index.js'
import { rejectionOf } from '../../../support/wait.js'

const BLOB = 'b1'.repeat(32) as Hash

/** Deleting data items over a real database. */
describe('data: delete', () => {
  const temp = new TempDirs()
  let r: Repos
  let remover: DataRemover

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-data-delete-'), 'db'))
    remover = new DataRemover({ db: r.db, data: r.data, blobs: r.blobs })
  })
  afterEach(async () => {
    await r.db.close()
    await temp.cleanup()
  })

  async function stored(opts: { blob?: Hash; namespace?: string } = {}): Promise<Data> {
    const value = JSON.stringify({ n: Math.random() })
    const d: Data = {
      id: newId<DataId>(),
      validator: 'json',
      namespace: opts.namespace ?? 'default',
      hash: dataHash({ valueRaw: value, ...(opts.blob ? { blobHash: opts.blob } : {}) }),
      created: now(),
      value,
      ...(opts.blob ? { blob: { hash: opts.blob, size: 3, name: 'f' } } : {}),
    }
    await r.db.transaction((tx) => {
      if (opts.blob) r.blobs.insert(tx, { hash: opts.blob, size: 3, created: now() })
      r.data.insert(tx, d, true)
    })
    return d
  }

  async function carried(d: Data): Promise<Message> {
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: d.namespace, topics: ['t'], datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
    const m: Message = { header, hash: messageHash(header), state: 'ready', data: [{ id: d.id, hash: d.hash }] }
    await r.db.transaction((tx) => r.messages.insert(tx, m, true))
    return m
  }

  const refusal = rejectionOf

  it('deletes a data item no message carries', async () => {
    const d = await stored()
    const kept = await stored()
    await remover.delete('default', d.id)
    expect(r.data.get(d.id)).to.equal(undefined)
    expect(r.data.get(kept.id)).to.not.equal(undefined)
  })

  it('deletes only this member’s own data item: a peer’s copy under the same id is not found, and stays', async () => {
    const d = await stored()
    const value = '"a peer\'s"'
    const peers: Data = { ...d, hash: dataHash({ valueRaw: value }), value }
    await r.db.transaction((tx) => r.data.insert(tx, peers, false))
    await remover.delete('default', d.id)
    expect(r.data.byRef(d), 'its own, deleted').to.equal(undefined)
    expect(r.data.byRef(peers)!.value).to.equal(value)
    expect(isParleyError(await refusal(remover.delete('default', d.id)), 'NOT_FOUND')).to.equal(true)
  })

  it('refuses (409) a data item a message carries, and keeps it', async () => {
    const d = await stored()
    const m = await carried(d)
    const err = await refusal(remover.delete('default', d.id))
    expect(isParleyError(err, 'CONFLICT')).to.equal(true)
    expect((err as Error).message).to.contain(m.header.id)
    expect(r.data.get(d.id)).to.not.equal(undefined)
  })

  it('stops holding the blob only when no other data item refers to it', async () => {
    const a = await stored({ blob: BLOB })
    const b = await stored({ blob: BLOB })
    await remover.delete('default', a.id)
    expect(r.blobs.has(BLOB), 'b still refers to it').to.equal(true)
    await remover.delete('default', b.id)
    expect(r.blobs.has(BLOB)).to.equal(false)
  })

  it('an unknown id, or one of another namespace, is not found', async () => {
    const d = await stored({ namespace: 'ns1' })
    expect(isParleyError(await refusal(remover.delete('default', d.id)), 'NOT_FOUND')).to.equal(true)
    expect(isParleyError(await refusal(remover.delete('ns1', newId<DataId>())), 'NOT_FOUND')).to.equal(true)
    expect(r.data.get(d.id)).to.not.equal(undefined)
  })
})
