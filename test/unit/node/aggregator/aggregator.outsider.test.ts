import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs, logCollector } from '../../../support/db/helpers.js'
import { openRepos, snapshotInThread, type Repos } from '../../../support/repos.js'
import { Database } from '../../../../node/db/database.js'
import { migrations } from '../../../../node/db/schema/index.js'
import { BatchesRepo } from '../../../../node/db/repos/batches.js'
import { PinsRepo } from '../../../../node/db/repos/pins.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { PrivateChecks } from '../../../../node/aggregator/private-check.js'
import { PrivateReceiver } from '../../../../node/aggregator/private-receiver.js'
import { storeReceivedBatch } from '../../../../node/aggregator/store-batch.js'
import { NextPinsRepo } from '../../../../node/db/repos/nextpins.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { sealGroup } from '../../../../node/identity/group-resolver.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { broadcastContext, dataHash, dataRefsHash, formatPin, messageHash, parsePin, privateContext, privatePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { localIdentity, type BatchPayload, type BatchRecord, type Data, type Group, type Header, type MessageType } from '../../../../node/model/index.js'
import type { DefinitionHandler } from '../../../../node/definitions/types.js'
import type { Peer } from '../../../../node/exchange/index.js'

const NS = 'default'
const KEYS = ['0x00000000000000000000000000000000000000a0', '0x00000000000000000000000000000000000000a1', '0x00000000000000000000000000000000000000a2']
const ORG0 = 'did:firefly:org/org0'
const KEY0 = KEYS[0]!
/** This member: org1 on node1. org0 sends; org2 is in the group this member is not part of. */
const self1 = localIdentity('org1', 'node1', KEYS[1]!)
const peer0: Peer = { node: 'did:firefly:node/node0', org: 'org0', endpoint: 'https://127.0.0.1:1', cert: '' }
/** Private batches of a group this member is not in: their pins come, their batches never do. */
const OUTSIDE_PINS = 2000
const DEFINITION_TAG = 'test_definition'

/** Counts what the pins repository answers (rows, or one per single answer), method by method. */
function spyOnPins(pins: PinsRepo): { rows: () => number; calls: Map<string, number>; reset: () => void } {
  let rows = 0
  const calls = new Map<string, number>()
  const target = pins as unknown as Record<string, unknown>
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(pins))) {
    const f = target[name]
    if (name === 'constructor' || typeof f !== 'function') continue
    target[name] = (...args: unknown[]) => {
      const out = (f as (...a: unknown[]) => unknown).apply(pins, args)
      calls.set(name, (calls.get(name) ?? 0) + 1)
      rows += Array.isArray(out) ? out.length : out === undefined ? 0 : 1
      return out
    }
  }
  return { rows: () => rows, calls, reset: () => ((rows = 0), calls.clear()) }
}

/**
 * A member outside a private group sees that group's pins on chain and never its batches. Those pins must cost it
 * nothing at each rewind, and must not sit in memory; broadcast ordering and its own groups' late batches go on as
 * before. Over the real database and repositories.
 */
describe('aggregator: a member outside private groups', function () {
  this.timeout(120_000)
  const temp = new TempDirs()
  let r: Repos
  let agg: Aggregator
  let spy: ReturnType<typeof spyOnPins>
  let inside: Group
  let outside: Hash
  let outsideNonce: number

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-outsider-'), 'db'))
    const nodes: IdentityId[] = []
    await r.db.transaction((tx) => {
      KEYS.forEach((key, i) => {
        const org = newId<IdentityId>()
        const node = newId<IdentityId>()
        r.identities.insert(tx, { id: org, did: `did:firefly:org/org${i}`, type: 'org', namespace: 'svc_system', name: `org${i}`, messages: { claim: newId<MessageId>() }, created: now() })
        r.identities.insertVerifier(tx, { identity: org, type: 'ethereum_address', value: key, created: now() })
        r.identities.insert(tx, { id: node, did: `did:firefly:node/node${i}`, type: 'node', parent: org, namespace: 'svc_system', name: `node${i}`, messages: { claim: newId<MessageId>() }, created: now() })
        nodes.push(node)
      })
    })
    const sealed = sealGroup(NS, '', [
      { identity: ORG0, node: nodes[0]! },
      { identity: self1.orgDid, node: nodes[1]! },
    ])
    inside = { hash: sealed.hash, namespace: NS, name: '', members: sealed.members, created: now() }
    await r.db.transaction((tx) => r.groups.insert(tx, inside))
    outside = sealGroup(NS, '', [
      { identity: ORG0, node: nodes[0]! },
      { identity: 'did:firefly:org/org2', node: nodes[2]! },
    ]).hash
    outsideNonce = 0
    const definition: DefinitionHandler = { tag: DEFINITION_TAG, handle: () => ({ kind: 'confirm', events: [] }) }
    agg = new Aggregator({
      ...r,
      validator: new DataValidatorImpl(() => undefined),
      definitions: [definition],
      privateChecks: new PrivateChecks({ nextpins: new NextPinsRepo(r.db), pins: r.pins, groups: r.groups, identities: r.identities }),
      log: () => {},
      onOutcome: () => {},
    })
    spy = spyOnPins(r.pins)
  })
  afterEach(async () => {
    await agg.stop()
    await r.db.close()
  })
  after(() => temp.cleanup())

  // --- batches and pins, as the fetcher, the exchange and the chain would bring them ---

  function item(header: Omit<Header, 'id' | 'txtype' | 'author' | 'key' | 'created' | 'namespace' | 'datahash'>, value: string, blob?: Data['blob']) {
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: NS, hash: dataHash({ valueRaw: value, ...(blob ? { blobHash: blob.hash } : {}) }), created: now(), value, ...(blob ? { blob } : {}) }
    const h: Header = { id: newId<MessageId>(), txtype: 'batch_pin', author: ORG0, key: KEY0, created: now(), namespace: NS, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]), ...header }
    const message: BatchPayload['messages'][number] = { header: h, hash: messageHash(h), data: [{ id: d.id, hash: d.hash }] }
    return { message, data: d }
  }

  function batch(type: 'broadcast' | 'private', items: ReturnType<typeof item>[]): BatchPayload {
    const id = newId<BatchId>()
    const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
    const messages = items.map((i) => i.message)
    const data = items.map((i) => i.data)
    const { hash } = sealManifest({ id, tx, messages, data })
    return { id, type, namespace: NS, node: peer0.node, author: ORG0, key: KEY0, ...(type === 'private' ? { group: inside.hash } : {}), created: now(), hash, tx, messages, data }
  }

  const broadcast = (topic: string, type: MessageType = 'broadcast', blob?: Data['blob']) =>
    batch('broadcast', [item({ type, topics: [topic], ...(type === 'definition' ? { tag: DEFINITION_TAG } : {}) }, JSON.stringify(newId()), blob)])

  /** A private message of the group this member is in, on topic `a` at `nonce`. */
  function mine(nonce: number): BatchPayload {
    const i = item({ type: 'private', group: inside.hash, topics: ['a'] }, JSON.stringify(newId()))
    return batch('private', [{ ...i, message: { ...i.message, pins: [formatPin(privatePin('a', inside.hash, ORG0, nonce), nonce)] } }])
  }

  async function store(...bs: BatchPayload[]): Promise<void> {
    await r.db.transaction((tx) => {
      for (const b of bs) storeReceivedBatch(r, tx, b, sealManifest(b).manifest, 'Qm' + b.id)
    })
  }

  type Pinned = BatchPayload | { outside: number }

  /** Pins in chain order, as pin-ingest writes them: a private batch's pins are masked (no payload reference). */
  async function chain(...pinned: Pinned[]): Promise<void> {
    await r.db.transaction((tx) => {
      for (const p of pinned) {
        if ('outside' in p) {
          // Private batches of the other group, one pin each: this member cannot even tell their topics.
          for (let i = 0; i < p.outside; i++) {
            const nonce = outsideNonce++
            r.pins.insert(tx, { batchId: newId<BatchId>(), batchHash: privatePin('x', outside, ORG0, nonce + 1e6), index: 0, hash: privatePin('secret', outside, ORG0, nonce), masked: true, signer: KEY0, eventId: newId() })
          }
          continue
        }
        const contexts = p.messages.flatMap((m) => (p.type === 'private' ? m.pins!.map((x) => parsePin(x).hash) : m.header.topics.map((t) => broadcastContext(t))))
        r.pins.insertMany(
          tx,
          contexts.map((hash, index) => ({ batchId: p.id, batchHash: p.hash, index, hash, masked: p.type === 'private', signer: KEY0, eventId: newId() })),
        )
      }
    })
  }

  /** `count` broadcast batches on topics t1/t2, each followed by a share of the outside pins. */
  function interleaved(count: number, outsidePins: number): { batches: BatchPayload[]; order: Pinned[] } {
    const batches: BatchPayload[] = []
    const order: Pinned[] = []
    for (let k = 0; k < count; k++) {
      const b = broadcast(k % 2 === 0 ? 't1' : 't2')
      batches.push(b)
      order.push(b, { outside: outsidePins / count })
    }
    return { batches, order }
  }

  async function settle(): Promise<void> {
    agg.wake()
    await agg.whenIdle()
  }

  const confirmed = () => r.events.list({ namespace: NS, type: 'message_confirmed', limit: 10_000, skip: 0, ascending: true }).map((e) => e.reference)
  const ids = (...bs: BatchPayload[]) => bs.flatMap((b) => b.messages.map((m) => m.header.id))
  const state = (b: BatchPayload) => r.messages.get(b.messages[0]!.header.id)!.state

  it(`confirms broadcast messages in chain order among ${OUTSIDE_PINS} private pins it never receives the batches of, and keeps none of those in memory`, async () => {
    const { batches, order } = interleaved(20, OUTSIDE_PINS)
    await store(...batches)
    await chain(...order)
    agg.start()
    await agg.whenIdle()
    expect(confirmed()).to.deep.equal(ids(...batches))
    expect(r.pins.waiting(), 'the private pins still wait').to.have.length(OUTSIDE_PINS)
    expect(agg.queuedPins, 'private pins are not queued').to.equal(0)

    // A broadcast pin whose batch is not downloaded yet still holds its topic (and is queued), private pins or not.
    const late = broadcast('t1')
    const after = broadcast('t1')
    const other = broadcast('t2')
    await store(after, other)
    await chain(late, { outside: 10 }, after, { outside: 10 }, other)
    await settle()
    expect(confirmed().slice(batches.length)).to.deep.equal(ids(other))
    expect(agg.queuedPins).to.equal(2)
    await store(late)
    agg.batchArrived(late.id)
    await agg.whenIdle()
    expect(confirmed().slice(batches.length)).to.deep.equal(ids(other, late, after))
    expect(agg.queuedPins).to.equal(0)

    // After a restart too: the queues are rebuilt from the broadcast pins only.
    await agg.stop()
    agg = new Aggregator({ ...r, validator: new DataValidatorImpl(() => undefined), definitions: [], log: () => {}, onOutcome: () => {} })
    spy.reset()
    agg.start()
    await agg.whenIdle()
    expect(agg.queuedPins).to.equal(0)
    expect(spy.rows(), 'a start reads the pins that can be decided, not those of batches never received').to.be.below(10)
  })

  it('walks again, at a global rewind, only pins whose batch is here: a settled blob, a settled definition, a recheck', async () => {
    const blob = { hash: 'ab'.repeat(32) as Hash, size: 10, name: 'f.bin', public: 'QmBlob' }
    const withBlob = broadcast('tb', 'broadcast', blob)
    const behindBlob = broadcast('tb')
    const definition = broadcast('defs', 'definition')
    const { batches, order } = interleaved(20, OUTSIDE_PINS)
    await store(withBlob, behindBlob, ...batches)
    // The message with a blob and the definition (its batch not here yet) come first, so every rewind starts before
    // all the private pins.
    await chain(withBlob, definition, ...order, behindBlob)
    agg.start()
    await agg.whenIdle()
    expect(confirmed()).to.deep.equal(ids(...batches))
    expect(state(withBlob)).to.equal('pending')
    expect(state(behindBlob)).to.equal('pending')

    // A recheck: its cost does not grow with the private pins whose batches never come.
    spy.reset()
    agg.recheckWaiting()
    await agg.whenIdle()
    const recheck = spy.rows()
    expect(recheck, JSON.stringify([...spy.calls])).to.be.below(20)
    await chain({ outside: OUTSIDE_PINS })
    await settle()
    spy.reset()
    agg.recheckWaiting()
    await agg.whenIdle()
    expect(spy.rows(), `${2 * OUTSIDE_PINS} private pins waiting`).to.equal(recheck)

    // A definition arrives and is applied: the walk comes back from the first waiting pin whose batch is here.
    spy.reset()
    await store(definition)
    agg.batchArrived(definition.id)
    await agg.whenIdle()
    expect(confirmed().slice(-1)).to.deep.equal(ids(definition))
    expect(spy.rows(), JSON.stringify([...spy.calls])).to.be.below(20)

    // The blob is settled: the message holding its topic and the one behind it are confirmed, in order.
    spy.reset()
    await r.db.transaction((tx) => {
      r.blobs.insert(tx, { hash: blob.hash, size: blob.size, created: now() })
      r.refs.settle(tx, { hash: blob.hash, size: blob.size, public: blob.public }, { ok: true }, now())
    })
    agg.blobSettled()
    await agg.whenIdle()
    expect(confirmed().slice(-2)).to.deep.equal(ids(withBlob, behindBlob))
    expect(spy.rows(), JSON.stringify([...spy.calls])).to.be.below(20)
    expect(agg.queuedPins).to.equal(0)
  })

  it('reads, at a rewind, through indexes that hold only pins it can act on (SQLite does not step over the others)', async () => {
    const waiting = broadcast('tb', 'broadcast', { hash: 'cd'.repeat(32) as Hash, size: 1, name: 'f', public: 'QmX' })
    const { batches, order } = interleaved(4, 400)
    await store(waiting, ...batches)
    await chain(waiting, ...order)
    agg.start()
    await agg.whenIdle()
    const statements: { sql: string; params: unknown }[] = []
    const db = r.db as unknown as Record<'all' | 'get', (sql: string, params?: unknown) => unknown>
    const originals = { all: db.all, get: db.get }
    for (const name of ['all', 'get'] as const) {
      const f = originals[name].bind(r.db)
      db[name] = (sql, params) => {
        if (/\bFROM pins\b/.test(sql)) statements.push({ sql, params })
        return f(sql, params)
      }
    }
    agg.recheckWaiting()
    agg.blobSettled()
    agg.batchArrived(waiting.id)
    await agg.whenIdle()
    Object.assign(db, originals)
    expect(statements).to.not.have.length(0)
    for (const s of statements) {
      const plan = r.db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${s.sql}`, s.params as never).map((p) => p.detail)
      // Every row such an index yields is a row answered (or a bounded MIN): no scan filtered by held or masked.
      const fits = plan.every((d) => /USING (COVERING )?INDEX (pins_held_waiting|pins_broadcast_waiting)\b|USING INDEX sqlite_autoindex_pins_1 \(batch_id=\?\)|USING INDEX pins_waiting \(seq>\?\)/.test(d))
      expect(fits, `${s.sql}: ${plan.join('; ')}`).to.equal(true)
    }
  })

  it('confirms its own group’s private batches that arrive long after their pins, through a rewind to each batch', async () => {
    const { batches, order } = interleaved(10, OUTSIDE_PINS)
    const p0 = mine(0)
    const p1 = mine(1)
    await store(...batches)
    await chain(p0, ...order.slice(0, 10), p1, ...order.slice(10))
    agg.start()
    await agg.whenIdle()
    expect(confirmed()).to.deep.equal(ids(...batches))
    expect(agg.queuedPins).to.equal(0)

    const arrived: BatchId[] = []
    const receiver = new PrivateReceiver({
      ...r,
      self: self1,
      arrived: (id) => {
        arrived.push(id)
        agg.batchArrived(id)
      },
    })
    // The second message comes first: it waits for the first (its nonce is not the next expected one).
    spy.reset()
    await receiver.handle(peer0, p1)
    await agg.whenIdle()
    expect(state(p1)).to.equal('pending')
    expect(spy.rows(), JSON.stringify([...spy.calls])).to.be.below(20)
    spy.reset()
    await receiver.handle(peer0, p0)
    await agg.whenIdle()
    expect(arrived).to.deep.equal([p1.id, p0.id])
    expect(confirmed().slice(batches.length)).to.deep.equal(ids(p0, p1))
    expect(spy.rows(), JSON.stringify([...spy.calls])).to.be.below(20)
    expect(new NextPinsRepo(r.db).next(privateContext('a', inside.hash), ORG0)).to.equal(2)
    expect(r.pins.waiting(), 'only the other group’s pins still wait').to.have.length(OUTSIDE_PINS)
  })

  it('confirms a private message whose pin landed before its predecessor’s once that one is confirmed (both held here)', async () => {
    const p0 = mine(0)
    const p1 = mine(1)
    // Both batches here, their pins on chain in the wrong order (a lost pin transaction sent again lands late).
    await store(p0, p1)
    await chain(p1, p0)
    agg.start()
    await agg.whenIdle()
    // p1 was read first and waited for nonce 0; confirming p0 moved the nonce on, and that alone walks p1 again.
    expect(confirmed()).to.deep.equal(ids(p0, p1))
  })

  it('rejects a private message carried in a broadcast batch (readable by all; it could plant a group anywhere)', async () => {
    const i = item({ type: 'private', group: inside.hash, topics: ['a'] }, JSON.stringify(newId()))
    const leaked = batch('broadcast', [{ ...i, message: { ...i.message, pins: [formatPin(privatePin('a', inside.hash, ORG0, 0), 0)] } }])
    const next = broadcast('a')
    await store(leaked, next)
    await chain(leaked, next)
    await settle()
    expect(r.messages.get(leaked.messages[0]!.header.id)!.rejectReason).to.contain('cannot travel in a broadcast batch')
    expect(confirmed()).to.deep.equal(ids(next))
  })

  it('refuses a broadcast message pinned as a private batch: it is not queued, so it could not hold its topic', async () => {
    const b = broadcast('t1')
    const next = broadcast('t1')
    await store(b, next)
    await r.db.transaction((tx) => r.pins.insert(tx, { batchId: b.id, batchHash: b.hash, index: 0, hash: broadcastContext('t1'), masked: true, signer: KEY0, eventId: newId() }))
    await chain(next)
    await settle()
    expect(r.messages.get(b.messages[0]!.header.id)!.rejectReason).to.contain('pinned on chain as a private batch')
    expect(confirmed()).to.deep.equal(ids(next))
  })
})

/** `pins.held` (schema v7) is what a rewind reads by: the database keeps it, whatever order pins and batches come in. */
describe('pins: held, kept by the database', function () {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  const record = (id: BatchId, state: 'received' | 'refused'): BatchRecord =>
    ({ id, type: 'broadcast', namespace: NS, author: ORG0, key: KEY0, created: now(), hash: 'ee'.repeat(32) as Hash, manifest: '{"messages":[]}', txId: newId<TxId>(), state, local: false }) as BatchRecord
  const pin = (batchId: BatchId, index: number) => ({ batchId, batchHash: 'ee'.repeat(32) as Hash, index, hash: broadcastContext(`t${index}`), masked: false, signer: KEY0, eventId: newId() })
  const held = (db: Database) => db.all<{ batch_id: string; idx: number; held: number }>('SELECT batch_id, idx, held FROM pins ORDER BY seq').map((p) => `${p.batch_id}:${p.idx}:${p.held}`)

  async function write(db: Database): Promise<{ early: BatchId; late: BatchId; refused: BatchId; never: BatchId }> {
    const batches = new BatchesRepo(db)
    const pins = new PinsRepo(db)
    const [early, late, refused, never] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
    // A batch before its pins (this node's own, or a private one delivered before its pin), then pins before their
    // batch (downloaded later), a refused batch, and a batch that never comes.
    await db.transaction((tx) => batches.insert(tx, record(early, 'received')))
    await db.transaction((tx) => pins.insertMany(tx, [pin(early, 0), pin(late, 0), pin(late, 1), pin(refused, 0), pin(never, 0)]))
    await db.transaction((tx) => {
      batches.insert(tx, record(late, 'received'))
      batches.insert(tx, record(refused, 'refused'))
    })
    return { early, late, refused, never }
  }

  it('marks a pin held when its batch is here, whichever came first, and not for a refused batch; a replay of the journal marks the same', async () => {
    const dir = await temp.make('parley-held-')
    const db = await Database.open({ dir, migrations, buildSnapshot: snapshotInThread })
    const { early, late, refused, never } = await write(db)
    expect(held(db)).to.deep.equal([`${early}:0:1`, `${late}:0:1`, `${late}:1:1`, `${refused}:0:0`, `${never}:0:0`])
    expect(new PinsRepo(db).heldWaitingBetween(0, 100, 10).map((p) => `${p.batchId}:${p.index}`)).to.deep.equal([`${early}:0`, `${late}:0`, `${late}:1`])
    // What a process killed now leaves: the journal only, replayed at open.
    const image = await temp.crashImage(dir)
    const expected = held(db)
    await db.close()
    const { lines, log } = logCollector()
    const reopened = await Database.open({ dir: image, migrations, buildSnapshot: snapshotInThread, log })
    expect(lines.join('\n')).to.match(/replayed \d+ transactions/)
    expect(held(reopened)).to.deep.equal(expected)
    await reopened.close()
  })

  it('fills held in for pins written before it existed (schema v6 and earlier)', async () => {
    const dir = await temp.make('parley-held-')
    const v7 = migrations.findIndex((m) => m.version === 7)
    const old = await Database.open({ dir, migrations: migrations.slice(0, v7), buildSnapshot: snapshotInThread })
    const batches = new BatchesRepo(old)
    const [here, refused, never] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
    await old.transaction((tx) => {
      batches.insert(tx, record(here, 'received'))
      batches.insert(tx, record(refused, 'refused'))
      for (const [b, i] of [[here, 0], [refused, 0], [never, 0]] as const) {
        const p = pin(b, i)
        tx.run('INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id) VALUES (?, ?, ?, ?, ?, ?, ?)', [p.batchId, p.batchHash, p.index, p.hash, 0, p.signer, p.eventId])
      }
    })
    await old.close()
    const db = await Database.open({ dir, migrations, buildSnapshot: snapshotInThread })
    expect(held(db)).to.deep.equal([`${here}:0:1`, `${refused}:0:0`, `${never}:0:0`])
    await db.close()
  })
})
