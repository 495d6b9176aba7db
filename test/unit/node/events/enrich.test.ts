import { expect } from 'chai'
import http from 'node:http'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'
import { createEventEnricher } from '../../../../node/events/index.js'
import { eventRenderer, presentBlockchainEvent, presentDatatype, presentEvent, presentIdentity, presentMessage } from '../../../../node/api/present.js'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import type { NodeServices } from '../../../../node/services.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { freePort } from '../../../../network/process.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type Address, type BatchId, type DataId, type DatatypeId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { goJson, type GoJsonValue } from '../../../../node/core/json.js'
import {
  BATCH_PIN_ACTION,
  SYSTEM_NAMESPACE,
  type BatchTxType,
  type Data,
  type Datatype,
  type EventType,
  type Header,
  type Identity,
  type Message,
  type NewEvent,
  type NodeEvent,
} from '../../../../node/model/index.js'
import type { EventEnricher } from '../../../../node/events/index.js'

const NS = 'default'
const KEY = '0x' + 'aa'.repeat(20)
const CONTRACT = '0x' + 'c0'.repeat(20)

/**
 * Events with the objects they refer to: the enricher over a real (temporary) database, the API's rendering of
 * them, and `GET events?fetchreferences=true` through the real server.
 */
describe('event references', () => {
  const temp = new TempDirs()
  let r: Repos
  let enrich: EventEnricher
  /** Reads the database answered (db.all and db.get), counted from the last reset. */
  let reads = 0

  /** Block numbers of the BatchPin logs made here; also keeps names and values apart. */
  let block = 1

  /** A stored message (refs to one data item), confirmed in `batch` when given. */
  async function message(batch?: { id: BatchId; txId: TxId }): Promise<Message> {
    const valueRaw = JSON.stringify({ n: block })
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: NS, hash: dataHash({ valueRaw }), created: now(), value: valueRaw }
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: KEY, created: now(), namespace: NS, topics: ['t1'], datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
    const m: Message = { header, hash: messageHash(header), state: 'pending', data: [{ id: d.id, hash: d.hash }] }
    await r.db.transaction((tx) => {
      r.data.insert(tx, d, false)
      r.messages.insert(tx, m, false)
      if (batch) r.messages.confirmMany(tx, [{ id: header.id, hash: m.hash }], batch.id, batch.txId, now())
    })
    return r.messages.get(header.id)!
  }

  /** A stored batch of transaction type `txType`, and `pins` BatchPin logs for it (a re-pin stores a second one). */
  async function batch(txType: BatchTxType, pins: number): Promise<{ id: BatchId; txId: TxId; created: string; logIds: string[]; txHashes: string[] }> {
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const { manifest, hash } = sealManifest({ id, tx: { type: txType, id: txId }, messages: [], data: [] })
    const created = now()
    const logIds: string[] = []
    const txHashes: string[] = []
    await r.db.transaction((tx) => {
      r.batches.insert(tx, { id, type: 'broadcast', namespace: NS, author: 'did:firefly:org/org0', key: KEY, created, hash, manifest, txId, state: 'pinned', local: true })
      for (let i = 0; i < pins; i++) {
        const n = block++
        const txHash = '0x' + n.toString(16).padStart(64, '0')
        txHashes.push(txHash)
        logIds.push(
          r.blockchainEvents.insert(
            tx,
            {
              blockNumber: n,
              txIndex: 0,
              logIndex: 0,
              protocolId: `${String(n).padStart(12, '0')}/000000/000000`,
              txHash,
              author: KEY as Address,
              timestamp: 1_700_000_000 + n,
              action: BATCH_PIN_ACTION,
              txId,
              batchId: id,
              batchHash: hash,
              payloadRef: 'QmPayload',
              contexts: ['ab'.repeat(32) as Hash],
            },
            now(),
          )!,
        )
      }
    })
    return { id, txId, created, logIds, txHashes }
  }

  async function datatype(): Promise<Datatype> {
    const value = '{"type":"object"}'
    const d: Datatype = { id: newId<DatatypeId>(), message: newId<MessageId>(), validator: 'json', namespace: NS, name: `widget${block++}`, version: '1', hash: dataHash({ valueRaw: value }), created: now(), value, orderedAt: 0 }
    await r.db.transaction((tx) => r.datatypes.insert(tx, d))
    return d
  }

  async function events(list: [EventType, string, string?][]): Promise<NodeEvent[]> {
    const rows: NewEvent[] = list.map(([type, reference, namespace]) => ({ type, namespace: namespace ?? NS, reference, tx: newId(), topic: 't' }))
    return r.db.transaction((tx) => r.events.insertMany(tx, rows, now()))
  }

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-event-refs-'), 'db'))
    enrich = createEventEnricher(r)
    const all = r.db.all.bind(r.db)
    const get = r.db.get.bind(r.db)
    r.db.all = ((sql, params) => (reads++, all(sql, params))) as typeof r.db.all
    r.db.get = ((sql, params) => (reads++, get(sql, params))) as typeof r.db.get
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  /** One of each kind of reference, and one event whose object is not held here. */
  async function onePerKind() {
    const pinned = await batch('batch_pin', 2)
    const unpinned = await batch('unpinned', 0)
    const m = await message(pinned)
    const dt = await datatype()
    await registerOrg(r.db, r.identities, 'org0', KEY)
    const identity = r.identities.byDid('did:firefly:org/org0')!
    const list = await events([
      ['message_confirmed', m.header.id],
      ['message_rejected', newId()],
      ['datatype_confirmed', dt.id],
      ['identity_confirmed', identity.id, SYSTEM_NAMESPACE],
      ['transaction_submitted', pinned.txId],
      ['transaction_submitted', unpinned.txId],
      ['blockchain_event_received', pinned.logIds[1]!, SYSTEM_NAMESPACE],
      ['transaction_submitted', newId()],
    ])
    return { pinned, unpinned, m, dt, identity, list }
  }

  describe('the enricher', () => {
    it('answers each event with the object its type refers to, in the order given; a missing object gives empty refs', async () => {
      const { pinned, unpinned, m, dt, identity, list } = await onePerKind()
      const out = enrich(list)
      expect(out.map((e) => e.event)).to.deep.equal(list)
      const [msg, missing, datatypeRef, identityRef, tx, unpinnedTx, chainEvent, unknownTx] = out.map((e) => e.refs)
      expect(msg).to.deep.equal({ message: m })
      // The message as held: data references only, no values.
      expect(msg!.message!.data).to.deep.equal([{ id: m.data[0]!.id, hash: m.data[0]!.hash }])
      expect(missing).to.deep.equal({})
      expect(datatypeRef).to.deep.equal({ datatype: dt })
      expect(identityRef).to.deep.equal({ identity })
      expect(tx).to.deep.equal({ transaction: { id: pinned.txId, namespace: NS, type: 'batch_pin', created: pinned.created, blockchainIds: pinned.txHashes } })
      expect(unpinnedTx).to.deep.equal({ transaction: { id: unpinned.txId, namespace: NS, type: 'unpinned', created: unpinned.created, blockchainIds: [] } })
      expect(chainEvent).to.deep.equal({ blockchainEvent: r.blockchainEvents.byIds([pinned.logIds[1]!]).get(pinned.logIds[1]!) })
      expect(chainEvent!.blockchainEvent!.txHash).to.equal(pinned.txHashes[1])
      expect(unknownTx).to.deep.equal({})
      expect(enrich([])).to.deep.equal([])
      // A type this build does not know (read back from a newer build's log) refers to nothing it reads.
      const future = { ...list[0]!, type: 'token_transfer_confirmed' } as unknown as NodeEvent
      expect(enrich([future, list[0]!]).map((e) => e.refs)).to.deep.equal([{}, { message: m }])
    })

    it('answers a message event with the message its verdict was about, when another message shares its id', async () => {
      const honest = await message()
      const header = { ...honest.header, topics: ['squat'] }
      const squat: Message = { ...honest, header, hash: messageHash(header) }
      await r.db.transaction((tx) => {
        r.messages.insert(tx, squat, false)
        r.messages.confirmMany(tx, [{ id: honest.header.id, hash: honest.hash, pinSeq: 1 }], newId<BatchId>(), newId<TxId>(), now())
        r.messages.reject(tx, { id: squat.header.id, hash: squat.hash }, newId<BatchId>(), newId<TxId>(), now(), 'taken', 2)
      })
      const [confirmed, rejected, old] = await r.db.transaction((tx) =>
        r.events.insertMany(tx, [
          { type: 'message_confirmed', namespace: NS, reference: honest.header.id, referenceHash: honest.hash },
          { type: 'message_rejected', namespace: NS, reference: squat.header.id, referenceHash: squat.hash },
          // Written before events named a hash: the message its id alone names (the confirmed one).
          { type: 'message_rejected', namespace: NS, reference: squat.header.id },
        ], now()),
      )
      const hashes = enrich([confirmed!, rejected!, old!]).map((e) => [e.refs.message?.hash, e.refs.message?.state])
      expect(hashes).to.deep.equal([
        [honest.hash, 'confirmed'],
        [squat.hash, 'rejected'],
        [honest.hash, 'confirmed'],
      ])
    })

    it('reads once per kind of object for a whole page, whatever its size (the number of SQL reads does not grow with the page)', async () => {
      const { list } = await onePerKind()
      reads = 0
      enrich(list)
      const small = reads
      // Five kinds in the page: messages, datatypes, identities, transactions, blockchain events.
      expect(small).to.equal(5)

      const more: Message[] = []
      for (let i = 0; i < 60; i++) more.push(await message())
      const big = [...list, ...(await events(more.map((m) => ['message_confirmed', m.header.id] as [EventType, string])))]
      reads = 0
      const out = enrich(big)
      expect(reads).to.equal(small)
      expect(out.slice(list.length).map((e) => e.refs.message?.header.id)).to.deep.equal(more.map((m) => m.header.id))

      // A page of message events only reads messages.
      reads = 0
      enrich(big.slice(list.length))
      expect(reads).to.equal(1)
    })
  })

  describe('the renderer', () => {
    it("gives FireFly's EventDelivery shape without subscription: the event's fields and the object its type refers to", async () => {
      const { pinned, unpinned, m, dt, identity, list } = await onePerKind()
      const render = eventRenderer({ contract: CONTRACT })
      const [msg, missing, datatypeRef, identityRef, tx, unpinnedTx, chainEvent, unknownTx] = enrich(list).map(render)
      const keys = (o: object) => Object.keys(o).filter((k) => !(k in presentEvent(list[0]!)))
      expect(msg).to.deep.equal({ ...presentEvent(list[0]!), message: presentMessage(m, { topicAlias: true, batchIdAlias: true }) })
      // The spec's spellings beside FireFly's: `topic` in the header, `batchID` beside `batch`.
      expect((msg!.message as { header: { topic?: string[] } }).header.topic).to.deep.equal(['t1'])
      expect((msg!.message as { batchID?: string }).batchID).to.equal(pinned.id)
      expect(missing).to.deep.equal(presentEvent(list[1]!))
      expect(datatypeRef).to.deep.equal({ ...presentEvent(list[2]!), datatype: presentDatatype(dt) })
      expect(identityRef).to.deep.equal({ ...presentEvent(list[3]!), identity: presentIdentity(identity) })
      expect(tx).to.deep.equal({ ...presentEvent(list[4]!), transaction: { id: pinned.txId, namespace: NS, type: 'batch_pin', created: pinned.created, blockchainIds: pinned.txHashes } })
      expect((unpinnedTx!.transaction as { type: string }).type).to.equal('unpinned')
      const stored = r.blockchainEvents.byIds([pinned.logIds[1]!]).get(pinned.logIds[1]!)!
      // A blockchain event inside an event is shown in the event's namespace.
      expect(chainEvent).to.deep.equal({ ...presentEvent(list[6]!), blockchainEvent: presentBlockchainEvent(stored, SYSTEM_NAMESPACE, CONTRACT) })
      expect(chainEvent!.blockchainEvent).to.deep.include({ namespace: SYSTEM_NAMESPACE, name: 'BatchPin', batch: pinned.id, tx: { type: 'batch_pin', id: pinned.txId, blockchainId: pinned.txHashes[1] } })
      expect((chainEvent!.blockchainEvent as { info: { address: string } }).info.address).to.equal(CONTRACT)
      expect(unknownTx).to.deep.equal(presentEvent(list[7]!))
      expect([msg, datatypeRef, identityRef, tx, chainEvent].map((o) => keys(o!))).to.deep.equal([['message'], ['datatype'], ['identity'], ['transaction'], ['blockchainEvent']])
    })
  })

  describe('GET events', () => {
    let api: ApiServer
    let port: number
    const logs: string[] = []

    beforeEach(async () => {
      const events: NodeServices['query']['events'] = { list: (q) => r.events.list(q), enrich }
      const services = { config: { limits: DEFAULT_REQUEST_LIMITS, chain: { contract: CONTRACT } }, query: { events } } as unknown as NodeServices
      port = await freePort()
      api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
    })
    afterEach(async () => {
      await api.close()
      expect(logs, 'nothing here is a server error').to.deep.equal([])
    })

    function get(path: string): Promise<unknown> {
      return new Promise((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path }, (res) => {
            const chunks: Buffer[] = []
            res.on('data', (c: Buffer) => chunks.push(c))
            res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))) : reject(new Error(`${res.statusCode}: ${Buffer.concat(chunks).toString('utf8')}`))))
          })
          .on('error', reject)
      })
    }

    it('with fetchreferences, each event with its object as the renderer gives it; without, the events alone', async () => {
      const { list } = await onePerKind()
      const render = eventRenderer({ contract: CONTRACT })
      const inDefault = list.filter((e) => e.namespace === NS)
      const inSystem = list.filter((e) => e.namespace === SYSTEM_NAMESPACE)
      // As the route writes it (goJson writes a datatype's schema as the exact text stored).
      const roundTrip = (v: GoJsonValue) => JSON.parse(goJson(v)) as unknown
      expect(await get(`/api/v1/namespaces/${NS}/events?sort=sequence&fetchreferences=true`)).to.deep.equal(roundTrip(enrich(inDefault).map(render)))
      expect(await get(`/api/v1/namespaces/${SYSTEM_NAMESPACE}/events?sort=sequence&fetchreferences`)).to.deep.equal(roundTrip(enrich(inSystem).map(render)))
      expect(await get(`/api/v1/namespaces/${NS}/events?sort=sequence`)).to.deep.equal(roundTrip(inDefault.map(presentEvent)))
      expect(await get(`/api/v1/namespaces/${NS}/events?sort=sequence&fetchreferences=false`)).to.deep.equal(roundTrip(inDefault.map(presentEvent)))
      // One read for the page and one per kind of object in it: not one per event.
      reads = 0
      await get(`/api/v1/namespaces/${NS}/events?fetchreferences=true`)
      expect(reads).to.equal(1 + 3)
    })
  })
})
