import { expect } from 'chai'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { receivedRows, RecentBatches } from '../../../../node/aggregator/recent-batches.js'
import { storeReceivedBatch } from '../../../../node/aggregator/store-batch.js'
import { checkBatch, sealManifest } from '../../../../node/batch/verify.js'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { storedData } from '../../../../node/db/repos/data.js'
import { storedMessage } from '../../../../node/db/repos/messages.js'
import { refKey } from '../../../../node/db/repos/ref-key.js'
import type { BatchPayload, Data, Header, Message } from '../../../../node/model/index.js'
import { openRepos, registerOrg, withDigest, type Repos } from '../../../support/repos.js'

const KEY = '0x' + 'aa'.repeat(20)
const AUTHOR = 'did:firefly:org/orgA'

function dataItem(value: string | null, extra: Partial<Data> = {}): Data {
  const d = { id: newId<DataId>(), validator: 'json', namespace: 'default', created: now(), value, ...extra }
  return { ...d, hash: dataHash({ valueRaw: value, ...(d.blob ? { blobHash: d.blob.hash } : {}) }) } as Data
}

/** A verified broadcast batch payload: one message per topic list, each with one data item. */
function payload(topicLists: string[][], dataOf: (i: number) => Data = (i) => dataItem(JSON.stringify({ i })), headerOf: (i: number) => Partial<Header> = () => ({})): BatchPayload {
  const id = newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const data: Data[] = []
  const messages = topicLists.map((topics, i) => {
    const d = dataOf(i)
    data.push(d)
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: AUTHOR, key: KEY, created: now(), namespace: 'default', topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]), ...headerOf(i) }
    return { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }] }
  })
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'broadcast', namespace: 'default', author: AUTHOR, key: KEY, created: now(), hash, tx, messages, data }
}

/** Deep equality with key order: what a held object turns into on the wire must be what a read would give. */
function sameText(a: unknown, b: unknown): void {
  expect(JSON.stringify(a)).to.equal(JSON.stringify(b))
}

describe('recent batches', () => {
  let dir: string
  let repos: Repos

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-recent-'))
    repos = await openRepos(dir)
  })
  afterEach(async () => {
    await repos.db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  describe('storedMessage and storedData', () => {
    it('answer what reading the inserted row answers, key order included', async () => {
      const plain: Message = { header: { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: AUTHOR, key: KEY, created: now(), namespace: 'default', topics: ['a', 'b'], datahash: 'd'.repeat(64) as Hash }, hash: 'e'.repeat(64) as Hash, state: 'pending', data: [{ id: newId<DataId>(), hash: 'f'.repeat(64) as Hash }] }
      const variants: Message[] = [
        plain,
        // Empty optional texts are not stored: a read leaves them out.
        { ...plain, header: { ...plain.header, id: newId<MessageId>(), tag: '', cid: undefined }, pins: [] },
        { header: { ...plain.header, id: newId<MessageId>(), cid: newId<MessageId>(), group: 'c'.repeat(64) as Hash, tag: 't', type: 'private' }, hash: plain.hash, batch: newId<BatchId>(), txid: newId<TxId>(), state: 'ready', data: [], pins: ['1'.repeat(64) + ':0000000000000000'], idempotencyKey: 'k1' },
        { ...plain, header: { ...plain.header, id: newId<MessageId>() }, state: 'rejected', confirmed: now(), rejectReason: 'no', batch: newId<BatchId>(), txid: newId<TxId>() },
      ]
      const datas: Data[] = [
        dataItem('{"a":1}'),
        dataItem('{"a":2}', { datatype: { name: '', version: '' }, namespace: 'other' }),
        dataItem('{"a":3}', { datatype: { name: 'widget', version: '1.0' } }),
        dataItem(null, { blob: { hash: 'a'.repeat(64) as Hash, size: 10, name: '' } }),
        dataItem('{"b":"<&>"}', { blob: { hash: 'b'.repeat(64) as Hash, size: 0, name: 'f.txt', public: 'Qm1' } }),
      ].map(withDigest)
      await repos.db.transaction((tx) => {
        repos.messages.insertMany(tx, variants, false)
        repos.data.insertMany(tx, datas, false)
      })
      const read = repos.messages.getMany(variants.map((m) => m.header.id))
      for (const m of variants) sameText(storedMessage(m), read.get(m.header.id))
      const readData = repos.data.byRefs(datas)
      for (const d of datas) sameText(storedData(d), readData.get(refKey(d)))
    })
  })

  describe('the holder', () => {
    it('hands a batch out once, and only for the id, hash and manifest it was stored with', () => {
      const recent = new RecentBatches()
      const b = payload([['t1'], ['t2', 't3']])
      const { manifest } = sealManifest(b)
      recent.received(b, manifest)
      expect(recent.take(b.id, b.hash, manifest)?.manifest.entries.map((e) => [e.id, e.firstPin])).to.deep.equal([
        [b.messages[0]!.header.id, 0],
        [b.messages[1]!.header.id, 1],
      ])
      expect(recent.take(b.id, b.hash, manifest)).to.equal(undefined)

      recent.received(b, manifest)
      expect(recent.take(b.id, 'f'.repeat(64) as Hash, manifest)).to.equal(undefined)
      // Another hash is another batch (batches are known by id and hash): the one held is still served, once.
      expect(recent.take(b.id, b.hash, manifest)).to.not.equal(undefined)
      recent.received(b, manifest)
      expect(recent.take(b.id, b.hash, manifest.replace('"version":1', '"version":2'))).to.equal(undefined)
    })

    it('holds no unpinned batch, and no broadcast whose blob is not published yet', () => {
      const recent = new RecentBatches()
      const unpinned = payload([['t']])
      unpinned.tx.type = 'unpinned'
      recent.received(unpinned, sealManifest(unpinned).manifest)
      const unpublished = payload([['t']], () => dataItem(null, { blob: { hash: 'a'.repeat(64) as Hash, size: 1, name: '' } }))
      recent.received(unpublished, sealManifest(unpublished).manifest)
      expect(recent.size).to.equal(0)
    })

    it('forgets a batch stored again, empties on clear, and keeps within its budget (oldest out first)', () => {
      const recent = new RecentBatches(3 * 1500)
      const batches = [1, 2, 3, 4].map(() => payload([['t']]))
      for (const b of batches) recent.received(b, sealManifest(b).manifest)
      expect(recent.size).to.be.below(4)
      expect(recent.take(batches[0]!.id, batches[0]!.hash, sealManifest(batches[0]!).manifest)).to.equal(undefined)
      const last = batches[3]!
      recent.forget(last.id, last.hash)
      expect(recent.take(last.id, last.hash, sealManifest(last).manifest)).to.equal(undefined)
      recent.clear()
      expect(recent.size).to.equal(0)
    })

    it('holds two batches sharing an id apart, by hash', () => {
      const recent = new RecentBatches()
      const first = payload([['t']])
      const other = { ...payload([['u']]), id: first.id }
      const sealedOther = sealManifest(other)
      const second = { ...other, hash: sealedOther.hash }
      recent.received(first, sealManifest(first).manifest)
      recent.received(second, sealedOther.manifest)
      expect(recent.take(second.id, second.hash, sealedOther.manifest)?.manifest.entries[0]!.id).to.equal(second.messages[0]!.header.id)
      expect(recent.take(first.id, first.hash, sealManifest(first).manifest)?.manifest.entries[0]!.id).to.equal(first.messages[0]!.header.id)
    })

    it('keeps no parsed payload text alive through the messages it handed out', () => {
      setFlagsFromString('--expose-gc')
      const gc = runInNewContext('gc') as () => void
      const recent = new RecentBatches()
      const kept: Message[] = []
      gc()
      const before = process.memoryUsage().heapUsed
      for (let k = 0; k < 20; k++) {
        // A megabyte of data value in each payload text; its messages are what outlives the pass (the settled cache).
        const b = parseBatch(serializeBatch(payload([['topic-long-enough-to-slice']], () => dataItem(JSON.stringify({ pad: 'x'.repeat(1_000_000) })))))
        const { manifest } = sealManifest(b)
        recent.received(b, manifest)
        kept.push(...recent.take(b.id, b.hash, manifest)!.messages.values())
      }
      gc()
      expect(kept).to.have.length(20)
      expect(process.memoryUsage().heapUsed - before).to.be.below(5_000_000)
    })

    it("holds a sealed batch by its record's manifest, whatever the order its messages come in, and only with all their data", () => {
      const recent = new RecentBatches()
      const b = payload([['t1'], ['t2']])
      const { manifest } = sealManifest(b)
      const record = { id: b.id, hash: b.hash, manifest, txId: b.tx.id }
      const messages: Message[] = b.messages.map((m) => ({ ...m, state: 'ready', idempotencyKey: `k-${m.header.id}` }))
      recent.sealed(record, [...messages].reverse(), b.data)
      const held = recent.take(b.id, b.hash, manifest)!
      expect(held.manifest.entries.map((e) => e.id)).to.deep.equal(b.messages.map((m) => m.header.id))
      sameText(held.messages.get(b.messages[0]!.header.id), storedMessage({ ...messages[0]!, batch: b.id, txid: b.tx.id }))

      recent.sealed(record, messages, b.data.slice(1))
      recent.sealed({ ...record, id: newId<BatchId>() }, messages.slice(1), b.data)
      expect(recent.size).to.equal(0)
    })
  })

  describe('with the aggregator', () => {
    let recent: RecentBatches
    let agg: Aggregator

    beforeEach(async () => {
      recent = new RecentBatches()
      await registerOrg(repos.db, repos.identities, 'orgA', KEY)
      agg = new Aggregator({ ...repos, recent, validator: new DataValidatorImpl(() => undefined), definitions: [], log: () => {}, onOutcome: () => {} })
      agg.start()
      await agg.whenIdle()
    })
    afterEach(() => agg.stop())

    async function store(b: BatchPayload): Promise<void> {
      const checked = checkBatch(b, { batchId: b.id, batchHash: b.hash, txId: b.tx.id })
      if (!checked.ok) throw new Error(checked.reason)
      await repos.db.transaction((tx) => {
        storeReceivedBatch({ ...repos, recent }, tx, b, checked.manifest, 'Qm')
      })
    }
    async function pin(b: BatchPayload): Promise<void> {
      await repos.db.transaction((tx) => {
        let index = 0
        for (const m of b.messages) for (const t of m.header.topics) repos.pins.insert(tx, { batchId: b.id, batchHash: b.hash, index: index++, hash: broadcastContext(t), masked: false, signer: KEY, eventId: newId() })
      })
      agg.batchArrived(b.id)
      await agg.whenIdle()
    }
    const confirmed = () => repos.events.list({ namespace: 'default', type: 'message_confirmed', limit: 100, skip: 0, ascending: true }).map((e) => e.reference)

    it('holds a batch stored with new rows exactly as reading them back would give, and the first pass takes it', async () => {
      const b = payload([['t1'], ['t2', 't1']], (i) => dataItem(JSON.stringify({ i }), { namespace: '' }))
      expect(await store(b)).to.equal(undefined)
      expect(recent.size).to.equal(1)
      const held = recent.take(b.id, b.hash, sealManifest(b).manifest)!
      const ids = b.messages.map((m) => m.header.id)
      const read = repos.messages.getMany(ids)
      for (const id of ids) sameText(held.messages.get(id), read.get(id))
      // Received rows are named by the digest of what the batch carried, as its messages' references record.
      const rows = receivedRows(b).data
      expect(held.messages.get(ids[0]!)!.data).to.deep.equal([{ id: rows[0]!.id, hash: rows[0]!.hash, digest: rows[0]!.digest }])
      const readData = repos.data.byRefs(rows)
      for (const d of rows) sameText(held.data.get(refKey(d)), readData.get(refKey(d)))

      await store(b) // stored again: nothing new, so nothing held
      expect(recent.size).to.equal(0)
      const c = payload([['t1']])
      await store(c)
      await pin(b)
      await pin(c)
      expect(recent.size).to.equal(0)
      expect(confirmed()).to.deep.equal([...ids, c.messages[0]!.header.id])
    })

    it('serves nothing stale: a message two batches carry is settled once, by the pins that come first', async () => {
      const a = payload([['t1'], ['t2']])
      // Another batch carrying a's first message (same id and hash), stored after a, pinned before it.
      const other = payload([['t3']])
      const shared = a.messages[0]!
      other.messages = [shared]
      other.data = [a.data[0]!]
      other.hash = sealManifest(other).hash
      await store(a)
      expect(recent.size).to.equal(1)
      expect(await store(other)).to.equal(undefined)
      // other brought a message held already: a's held copy could go stale, so the holder let everything go.
      expect(recent.size).to.equal(0)
      await pin(other)
      await pin(a)
      expect(confirmed()).to.deep.equal([shared.header.id, a.messages[1]!.header.id])
    })

    it('stores a batch whose ids are held with other content beside them, and the holder gives each batch its own rows', async () => {
      const a = payload([['t1']])
      await store(a)
      // A message whose id is a's with other content, and a data item whose id is a's with other content.
      const forgedMessage = payload([['t2']])
      const reused = forgedMessage.messages[0]!
      forgedMessage.messages = [{ ...reused, header: { ...reused.header, id: a.messages[0]!.header.id } }]
      forgedMessage.messages[0]!.hash = messageHash(forgedMessage.messages[0]!.header)
      forgedMessage.hash = sealManifest(forgedMessage).hash
      const forgedData = payload([['t3']], () => ({ ...dataItem(JSON.stringify({ other: true })), id: a.data[0]!.id }))
      for (const b of [forgedMessage, forgedData]) {
        expect(await store(b)).to.equal(undefined)
        expect(repos.batches.byIdHash(b.id, b.hash)?.state).to.equal('received')
      }
      expect(repos.messages.allWithId(a.messages[0]!.header.id).map((m) => m.hash)).to.deep.equal([a.messages[0]!.hash, forgedMessage.messages[0]!.hash])
      expect(repos.data.getMany([a.data[0]!, forgedData.data[0]!]).map((d) => d.value)).to.deep.equal([a.data[0]!.value, forgedData.data[0]!.value])
      // Each message decided on its own; a's data is a's, whatever else shares its id. The id alone: the first pinned.
      await pin(forgedData)
      await pin(forgedMessage)
      await pin(a)
      expect(confirmed()).to.deep.equal([forgedData.messages[0]!.header.id, a.messages[0]!.header.id, a.messages[0]!.header.id])
      expect(repos.messages.allWithId(a.messages[0]!.header.id).map((m) => m.state)).to.deep.equal(['confirmed', 'confirmed'])
      expect(repos.messages.get(a.messages[0]!.header.id)!.hash).to.equal(forgedMessage.messages[0]!.hash)
    })

    it('lets go of everything on a rewind of the waiting pins (pins changed by hand)', async () => {
      const b = payload([['t1']])
      await store(b)
      agg.recheckWaiting()
      await agg.whenIdle()
      expect(recent.size).to.equal(0)
    })
  })
})
