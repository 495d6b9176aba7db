import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { Database } from '../../../../node/db/database.js'
import type { MessagesRepo } from '../../../../node/db/repos/messages.js'
import type { DataRepo } from '../../../../node/db/repos/data.js'
import type { BatchesRepo } from '../../../../node/db/repos/batches.js'
import type { BlobsRepo } from '../../../../node/db/repos/blobs.js'
import type { BlobRefsRepo } from '../../../../node/db/repos/blob-refs.js'
import type { IdentitiesRepo } from '../../../../node/db/repos/identities.js'
import type { EventsRepo } from '../../../../node/db/repos/events.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { BatchManager } from '../../../../node/batch/manager.js'
import { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import type { BatchConfig } from '../../../../node/batch/config.js'
import { verifyBatch } from '../../../../node/batch/verify.js'
import { MessageSender, payloadEstimate } from '../../../../node/messaging/sender.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import type { Chain, ChainStatus, MinedPin, PinBatchRequest, PinSubmission } from '../../../../node/chain/types.js'
import { pinSubmission } from '../../../../node/chain/pin-submission.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { broadcastContext, dataHash } from '../../../../node/core/hashes.js'
import { newId, type DataId } from '../../../../node/core/ids.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { now, timestampSortKey } from '../../../../node/core/time.js'
import { localIdentity, type BatchRecord, type LocalIdentity, type Message, type NodeEvent } from '../../../../node/model/index.js'
import { openRepos, registerOrg } from '../../../support/repos.js'
import { MemoryStorage, type Upload } from '../../../support/storage.js'

const KEY0 = '0x' + 'aa'.repeat(20)
const KEY1 = '0x' + 'bb'.repeat(20)
const BIG = 1_000_000_000

/** Shared storage in memory, whose uploads these tests read back in full. */
class FakeStorage extends MemoryStorage {
  get uploads(): Upload[] {
    return this.uploaded
  }
}

interface PinCall {
  req: PinBatchRequest
  signal: AbortSignal | undefined
  outcome: 'waiting' | 'failed' | 'abandoned' | 'pinned'
  txHash?: string
}

/** The chain seam: records every pin submission, fails or hangs when told to, mines otherwise. */
class FakeChain implements Chain {
  readonly calls: PinCall[] = []
  /** While true, submissions wait until their signal aborts (a chain that never mines). */
  hang = false
  /** While set, submissions wait for `release()` (a chain slow to mine), then mine. */
  private gate: { promise: Promise<void>; open: () => void } | undefined
  private failing = 0
  private mined = 0

  hold(): void {
    let open!: () => void
    this.gate = { promise: new Promise<void>((r) => (open = r)), open }
  }

  release(): void {
    this.gate?.open()
    this.gate = undefined
  }

  failNext(n: number): void {
    this.failing = n
  }

  start(): void {}

  /** Fails before the chain takes the transaction (`failNext`); else sent at once, then mined past the gate, or never (`hang`). */
  submitPinBatch(req: PinBatchRequest, signal?: AbortSignal): PinSubmission {
    const call: PinCall = { req, signal, outcome: 'waiting' }
    this.calls.push(call)
    if (this.failing > 0) {
      this.failing--
      call.outcome = 'failed'
      const failed = Promise.reject(new Error('chain unreachable'))
      return pinSubmission(failed, failed)
    }
    return pinSubmission(Promise.resolve('sent'), this.mine(call, signal))
  }

  private async mine(call: PinCall, signal?: AbortSignal): Promise<MinedPin> {
    if (this.hang) {
      await new Promise<never>((_, reject) => {
        const abandon = (): void => {
          call.outcome = 'abandoned'
          reject(new ParleyError('UNAVAILABLE', 'pin submission abandoned'))
        }
        if (signal?.aborted) abandon()
        else signal?.addEventListener('abort', abandon, { once: true })
      })
    }
    if (this.gate) await this.gate.promise
    this.mined++
    const txHash = '0x' + this.mined.toString(16).padStart(64, '0')
    call.outcome = 'pinned'
    call.txHash = txHash
    return { txHash, blockNumber: this.mined }
  }

  pinned(): PinCall[] {
    return this.calls.filter((c) => c.outcome === 'pinned')
  }

  status(): ChainStatus {
    return { connected: true, rpc: 'fake', contract: 'fake', lastProcessedBlock: this.mined }
  }

  async stop(): Promise<void> {}
}

/** Polls (no fixed sleep) until `cond` holds; the limit only turns a hang into a failure that says what was awaited. */
async function until(what: string, cond: () => boolean, limitMs = 30_000): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** The batch manager over a real (temporary) database and blob store, with shared storage and the chain faked. */
describe('batch manager', () => {
  let dir: string
  let db: Database
  let messages: MessagesRepo
  let data: DataRepo
  let batches: BatchesRepo
  let blobs: BlobsRepo
  let refs: BlobRefsRepo
  let identities: IdentitiesRepo
  let events: EventsRepo
  /** What the managers published, in order. */
  let published: NodeEvent[]
  let blobStore: BlobStore
  let storage: FakeStorage
  let chain: FakeChain
  let logs: string[]
  let managers: BatchManager[]
  const self = localIdentity('org0', 'node0', KEY0)

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-batchmgr-'))
    ;({ db, messages, data, batches, blobs, refs, identities, events } = await openRepos(join(dir, 'db')))
    published = []
    blobStore = await BlobStore.open(join(dir, 'blobs'))
    storage = new FakeStorage()
    chain = new FakeChain()
    logs = []
    managers = []
    // The sender refuses broadcasts until its org is registered.
    await registerOrg(db, identities, 'org0', KEY0)
    await registerOrg(db, identities, 'org1', KEY1)
  })
  afterEach(async () => {
    for (const m of managers) await m.stop()
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** A started manager, as the node builds it; stopped by afterEach. */
  function manager(config: Partial<BatchConfig> = {}): BatchManager {
    const m = new BatchManager({
      db,
      messages,
      data,
      batches,
      events,
      published: (written) => published.push(...written),
      storage,
      chain,
      self,
      config: { size: 3, timeoutMs: 60_000, payloadLimit: BIG, ...config },
      blobs: new BlobPublisher({ db, data, refs, blobStore, storage }),
      log: (line) => logs.push(line),
      // The same doubling waits, a fiftieth as long: what the tests count is tries and log lines, not seconds.
      retry: { minMs: 10, maxMs: 200 },
    })
    managers.push(m)
    m.start()
    return m
  }

  function sender(sink: BatchManager, identity: LocalIdentity = self): MessageSender {
    return new MessageSender({
      db,
      messages,
      data,
      blobs,
      refs,
      identities,
      self: identity,
      sink,
      validator: new DataValidatorImpl(() => undefined),
      confirmations: new Confirmations(),
    })
  }

  function send(s: MessageSender, opts: { namespace?: string; topics?: string[]; value?: unknown; dataId?: DataId } = {}): Promise<Message> {
    const body = { header: opts.topics ? { topics: opts.topics } : {}, data: [opts.dataId ? { id: opts.dataId } : { value: opts.value ?? { n: 1 } }] }
    return s.broadcast(opts.namespace ?? 'default', parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup: false }))
  }

  async function sendAll(s: MessageSender, n: number, opts: Parameters<typeof send>[1] = {}): Promise<Message[]> {
    const out: Message[] = []
    for (let i = 0; i < n; i++) out.push(await send(s, { value: { i }, ...opts }))
    return out
  }

  const batchOf = (m: Message) => messages.get(m.header.id)?.batch
  const batch = (m: Message): BatchRecord => batches.get(batchOf(m)!)!
  const allPinned = (ms: Message[]) => ms.every((m) => batchOf(m) !== undefined && batch(m).state === 'pinned')
  const manifestIds = (b: BatchRecord) => (JSON.parse(b.manifest) as { messages: { id: string }[] }).messages.map((m) => m.id)

  it('seals and dispatches each full batch at once, leaving a partial one for its timeout', async () => {
    const s = sender(manager({ size: 3, timeoutMs: 60_000 }))
    const sent = await sendAll(s, 7)
    await until('two batches pinned', () => allPinned(sent.slice(0, 6)))

    const first = batchOf(sent[0]!)!
    const second = batchOf(sent[3]!)!
    expect(first).to.not.equal(second)
    expect(sent.map(batchOf)).to.deep.equal([first, first, first, second, second, second, undefined])
    expect(chain.calls.map((c) => c.req.batchId)).to.deep.equal([first, second])

    await managers[0]!.stop()
    // The seventh's timeout is a minute away: stopping leaves it for the next start rather than sealing it.
    expect(batchOf(sent[6]!)).to.equal(undefined)
    expect(messages.unbatched().map((m) => m.header.id)).to.deep.equal([sent[6]!.header.id])
    expect(chain.calls).to.have.length(2)
  })

  it('seals a partial batch when its timeout passes, and not before', async () => {
    const s = sender(manager({ size: 3, timeoutMs: 100 }))
    const sent = await sendAll(s, 2)
    expect(sent.map(batchOf)).to.deep.equal([undefined, undefined])
    expect(batches.list('default', { limit: 10, skip: 0 })).to.deep.equal([])
    expect(chain.calls).to.deep.equal([])

    await until('the timed-out batch to reach the chain', () => chain.calls.length === 1)
    const b = batch(sent[0]!)
    expect(manifestIds(b)).to.deep.equal(sent.map((m) => m.header.id))
    expect(chain.calls[0]!.req.batchId).to.equal(b.id)
    // Sealed no sooner than the timeout after the first message (a lower bound, not a speed).
    expect(Date.parse(b.created) - Date.parse(sent[0]!.header.created)).to.be.at.least(95)
  })

  it('starts a new batch when the payload estimate would pass the limit, a message over the limit going alone', async () => {
    const small = { topics: ['t'], value: { n: 1 } }
    const big = { topics: ['t'], value: 'x'.repeat(4000) }
    const limit = 2500
    const s = sender(manager({ size: 100, timeoutMs: 60_000, payloadLimit: limit }))
    const [s1, s2, s3, b1, s4] = [await send(s, small), await send(s, small), await send(s, small), await send(s, big), await send(s, small)]
    // What the cut sees: two small ones fit, a third does not; the big one alone is over the limit.
    const estimate = (m: Message) => payloadEstimate(m, data.getMany(m.data))
    expect(2 * estimate(s1!)).to.be.at.most(limit)
    expect(3 * estimate(s1!)).to.be.above(limit)
    expect(estimate(b1!)).to.be.above(limit)

    await until('three batches pinned', () => allPinned([s1!, s2!, s3!, b1!]))
    const ids = [s1!, s2!, s3!, b1!].map(batchOf)
    expect(ids[0]).to.equal(ids[1])
    expect(new Set(ids).size).to.equal(3)
    expect(manifestIds(batch(s3!))).to.deep.equal([s3!.header.id])
    expect(manifestIds(batch(b1!))).to.deep.equal([b1!.header.id])
    expect(chain.calls.map((c) => c.req.batchId)).to.deep.equal([ids[0], ids[2], ids[3]])
    expect(batchOf(s4!)).to.equal(undefined)
  })

  it('pins in send order, with a context per topic per message and the payload storage answered for', async () => {
    const s = sender(manager({ size: 2 }))
    const sent = [await send(s, { topics: ['a'] }), await send(s, { topics: ['b', 'c'] }), await send(s, { topics: ['a'] }), await send(s, { topics: ['d'] })]
    await until('both batches pinned', () => allPinned(sent))

    const [b1, b2] = [batch(sent[0]!), batch(sent[2]!)]
    expect(batchOf(sent[1]!)).to.equal(b1.id)
    expect(batchOf(sent[3]!)).to.equal(b2.id)
    expect(chain.calls.map((c) => c.req.contexts)).to.deep.equal([
      ['a', 'b', 'c'].map(broadcastContext),
      ['a', 'd'].map(broadcastContext),
    ])
    for (const [i, b] of [b1, b2].entries()) {
      const call = chain.calls[i]!
      expect(call.req).to.include({ batchId: b.id, batchHash: b.hash, txId: b.txId, payloadRef: b.payloadRef })
      expect(storage.uploads.map((u) => u.ref)).to.include(call.req.payloadRef)
      // What a member would fetch from the pinned reference verifies against the pin.
      const payload = storage.payload(call.req.payloadRef)
      expect(verifyBatch(payload, { batchId: b.id, batchHash: b.hash, txId: b.txId })).to.equal(undefined)
      expect(payload.messages.map((m) => m.header.id)).to.deep.equal(sent.slice(2 * i, 2 * i + 2).map((m) => m.header.id))
      expect(b).to.include({ state: 'pinned', chainTx: call.txHash, namespace: 'default', author: self.orgDid, key: KEY0, node: self.nodeDid })
    }
    expect(storage.uploads.map((u) => u.name)).to.deep.equal(['batch.json', 'batch.json'])
    expect(logs).to.deep.equal([])
  })

  it('notes a batch uploaded and its pin sent while the pin is on its way, then records both times with the mined pin', async () => {
    chain.hold()
    const m = manager({ size: 1 })
    const [sent] = await sendAll(sender(m), 1)
    await until('the pin sent', () => chain.calls.length === 1)
    const id = batchOf(sent!)!
    await until('the send noted', () => m.progress.of(id)?.sent !== undefined)
    const noted = m.progress.of(id)!
    expect(noted.uploaded!.payloadRef).to.equal(chain.calls[0]!.req.payloadRef)
    expect(noted.sent!.chainTx).to.equal('sent')
    expect(batches.get(id)).to.include({ state: 'sealed' })
    chain.release()
    await until('the pin recorded', () => allPinned([sent!]))
    const b = batch(sent!)
    expect(b).to.include({ uploaded: noted.uploaded!.at, pinSent: noted.sent!.at })
    expect([b.created, b.uploaded!, b.pinSent!].map(timestampSortKey)).to.deep.equal([b.created, b.uploaded!, b.pinSent!].map(timestampSortKey).sort())
    await until('the note dropped', () => m.progress.of(id) === undefined)
  })

  it('keeps each (namespace, author) in batches of its own', async () => {
    const m = manager({ size: 2 })
    const org0 = sender(m)
    const org1 = sender(m, localIdentity('org1', 'node0', KEY1))
    const sent = [
      await send(org0, { namespace: 'ns1' }),
      await send(org0, { namespace: 'ns2' }),
      await send(org1, { namespace: 'ns1' }),
      await send(org0, { namespace: 'ns1' }),
      await send(org0, { namespace: 'ns2' }),
      await send(org1, { namespace: 'ns1' }),
    ]
    await until('three batches pinned', () => allPinned(sent))

    const [a, b, c] = [batch(sent[0]!), batch(sent[1]!), batch(sent[2]!)]
    expect(manifestIds(a)).to.deep.equal([sent[0]!, sent[3]!].map((x) => x.header.id))
    expect(manifestIds(b)).to.deep.equal([sent[1]!, sent[4]!].map((x) => x.header.id))
    expect(manifestIds(c)).to.deep.equal([sent[2]!, sent[5]!].map((x) => x.header.id))
    expect(a).to.include({ namespace: 'ns1', author: 'did:firefly:org/org0', key: KEY0 })
    expect(b).to.include({ namespace: 'ns2', author: 'did:firefly:org/org0', key: KEY0 })
    expect(c).to.include({ namespace: 'ns1', author: 'did:firefly:org/org1', key: KEY1 })
    expect(chain.calls.map((x) => x.req.batchId)).to.have.members([a.id, b.id, c.id])
  })

  it('publishes a blob before the payload that announces it, and only once', async () => {
    const content = Buffer.from('the blob content')
    const stored = await blobStore.write(Readable.from([content]))
    const id = newId<DataId>()
    await db.transaction((tx) => {
      blobs.insert(tx, { hash: stored.hash, size: stored.size, created: now() })
      data.insert(tx, { id, validator: 'json', namespace: 'default', hash: dataHash({ blobHash: stored.hash }), created: now(), value: null, blob: { hash: stored.hash, size: stored.size, name: 'f.bin' } }, true)
    })
    const s = sender(manager({ size: 1 }))
    const first = await send(s, { dataId: id })
    await until('the first batch pinned', () => allPinned([first]))
    const second = await send(s, { dataId: id })
    await until('the second batch pinned', () => allPinned([second]))

    const [blobUpload, payload1, payload2] = storage.uploads
    expect(storage.uploads).to.have.length(3)
    expect(blobUpload!.bytes.equals(content)).to.equal(true)
    expect(blobUpload!.name).to.equal(stored.hash)
    expect(data.get(id)!.blob!.public).to.equal(blobUpload!.ref)
    for (const p of [payload1!, payload2!]) expect(storage.payload(p.ref).data.map((d) => d.blob?.public)).to.deep.equal([blobUpload!.ref])
    expect(chain.calls.map((c) => c.req.payloadRef)).to.deep.equal([payload1!.ref, payload2!.ref])
  })

  it('retries storage and chain failures until the batch is pinned once, logging each problem once', async () => {
    storage.failNext(2)
    chain.failNext(2)
    const s = sender(manager({ size: 1 }))
    const [m] = await sendAll(s, 1)
    await until('the batch pinned after retries', () => allPinned([m!]))
    // The state is readable before its commit is durable; the closing log line follows the durable commit.
    await until('the recovery logged', () => logs.some((l) => l.includes('dispatched after retrying')))

    const b = batch(m!)
    expect(storage.attempts).to.equal(3)
    expect(storage.uploads).to.have.length(1)
    expect(chain.calls.map((c) => c.outcome)).to.deep.equal(['failed', 'failed', 'pinned'])
    // The payload went up once: the chain retries reuse its reference rather than uploading again.
    for (const c of chain.calls) expect(c.req).to.include({ batchId: b.id, batchHash: b.hash, payloadRef: storage.uploads[0]!.ref })
    expect(b).to.include({ state: 'pinned', chainTx: chain.pinned()[0]!.txHash, payloadRef: storage.uploads[0]!.ref })
    expect(logs.filter((l) => l.includes('dispatch failed'))).to.deep.equal([
      `batch ${b.id}: dispatch failed, retrying: storage unreachable`,
      `batch ${b.id}: dispatch failed, retrying: chain unreachable`,
    ])
    expect(logs.filter((l) => !l.includes('dispatch failed'))).to.deep.equal([`batch ${b.id}: dispatched after retrying`])
  })

  it('keeps pin order when a send fails: the next batch waits until the failed one has been sent again', async () => {
    chain.failNext(1)
    const s = sender(manager({ size: 1 }))
    const [first, second] = await sendAll(s, 2)
    await until('both pinned', () => allPinned([first!, second!]))
    expect(chain.calls.map((c) => [c.req.batchId, c.outcome])).to.deep.equal([
      [batchOf(first!), 'failed'],
      [batchOf(first!), 'pinned'],
      [batchOf(second!), 'pinned'],
    ])
  })

  it('lets the next batch grow past its timeout while a pin is in flight, and seals it once that pin is mined', async () => {
    chain.hold()
    const m = manager({ size: 100, timeoutMs: 30 })
    const s = sender(m)
    const [first] = await sendAll(s, 1)
    await until('the first pin submitted', () => chain.calls.length === 1)
    const more = await sendAll(s, 5)
    // Several timeouts pass with the first pin unmined: sealing the rest now would only queue it behind that pin.
    await new Promise((r) => setTimeout(r, 200))
    expect(more.map(batchOf)).to.deep.equal(more.map(() => undefined))
    chain.release()
    await until('all pinned', () => allPinned([first!, ...more]))
    expect(chain.calls.map((c) => c.req.batchId)).to.deep.equal([batchOf(first!), batchOf(more[0]!)])
    expect(manifestIds(batch(more[0]!))).to.deep.equal(more.map((x) => x.header.id))
  })

  it('writes one transaction_submitted per sealed pinned batch, in the batch namespace, and publishes it once durable', async () => {
    const s = sender(manager({ size: 2 }))
    const sent = [await send(s, { namespace: 'ns1' }), await send(s, { namespace: 'ns1' }), await send(s, { namespace: 'ns2' }), await send(s, { namespace: 'ns2' })]
    await until('both batches pinned', () => allPinned(sent))
    const [b1, b2] = [batch(sent[0]!), batch(sent[2]!)]
    const submitted = (ns: string) => events.list({ namespace: ns, type: 'transaction_submitted', limit: 10, skip: 0, ascending: true })
    for (const [ns, b] of [['ns1', b1], ['ns2', b2]] as const) {
      const list = submitted(ns)
      expect(list.map((e) => ({ reference: e.reference, tx: e.tx, topic: e.topic, created: e.created }))).to.deep.equal([{ reference: b.txId, tx: b.txId, topic: 'batch_pin', created: b.created }])
    }
    // Nothing else is written by sealing: the messages' own events come when they are confirmed.
    expect(events.list({ namespace: 'ns1', limit: 10, skip: 0 }).map((e) => e.type)).to.deep.equal(['transaction_submitted'])
    expect(published.map((e) => e.reference).sort()).to.deep.equal([b1.txId, b2.txId].sort())
    expect(published.map((e) => e.sequence).sort()).to.deep.equal([...submitted('ns1'), ...submitted('ns2')].map((e) => e.sequence).sort())
  })

  it('seals a definition at once, without waiting for the timeout', async () => {
    const m = manager({ size: 100, timeoutMs: 60_000 })
    const def = await sender(m).definition('svc_system', 'svc_identity_claim', ['t'], '{"identity":{}}')
    await until('the definition pinned', () => allPinned([def]))
    expect(manifestIds(batch(def))).to.deep.equal([def.header.id])
  })

  describe('stopping and resuming', () => {
    it('abandons a hanging pin promptly when stopped, through its signal, without logging a failure', async () => {
      chain.hang = true
      const m = manager({ size: 1 })
      const [sent] = await sendAll(sender(m), 1)
      await until('the pin submitted', () => chain.calls.length === 1)
      expect(chain.calls[0]!.signal?.aborted).to.equal(false)

      let guard: NodeJS.Timeout | undefined
      const hung = new Promise<'hung'>((r) => (guard = setTimeout(() => r('hung'), 20_000)))
      const outcome = await Promise.race([m.stop().then(() => 'stopped' as const), hung])
      clearTimeout(guard)
      expect(outcome).to.equal('stopped')
      expect(chain.calls[0]!.signal?.aborted).to.equal(true)
      expect(chain.calls[0]!.outcome).to.equal('abandoned')
      // Nothing but the pin is recorded after the seal: the upload is content-addressed and simply done again.
      expect(batch(sent!).state).to.equal('sealed')
      expect(logs).to.deep.equal([])
    })

    it('dispatches a batch sealed and uploaded by a stopped manager, same id, hash and payload reference, then stays quiet', async () => {
      chain.hang = true
      const first = manager({ size: 1 })
      const sent = await sendAll(sender(first), 3)
      // Pins do not wait for the previous one to be mined, only to be submitted: all three are out, in send order.
      await until('three pins submitted', () => chain.calls.length === 3)
      expect(chain.calls.map((c) => c.req.batchId)).to.deep.equal(sent.map(batchOf))
      await first.stop()
      const before = batch(sent[0]!)
      expect(before.state).to.equal('sealed')
      const abandoned = chain.calls.map((c) => c.req)

      chain.hang = false
      const second = manager({ size: 1 })
      await until('all three pinned', () => allPinned(sent))
      const after = batch(sent[0]!)
      expect(after).to.include({ id: before.id, hash: before.hash, payloadRef: abandoned[0]!.payloadRef, state: 'pinned' })
      // Uploaded again after the restart, the same bytes give the same references: the same pin requests go out.
      expect(chain.calls.slice(3).map((c) => c.req)).to.deep.equal(abandoned)
      // Pins follow send order across the restart.
      expect(chain.pinned().map((c) => c.req.batchId)).to.deep.equal(sent.map(batchOf))
      expect(storage.uploads.filter((u) => u.ref === abandoned[0]!.payloadRef)).to.have.length(2)

      // Nothing left for a later start, and nothing more reaches the chain.
      expect(batches.undispatched()).to.deep.equal([])
      expect(messages.unbatched()).to.deep.equal([])
      await second.stop()
      expect(chain.calls).to.have.length(6)
      expect(storage.uploads).to.have.length(6)
    })

    it('uploads and pins at the next start a batch sealed before storage ever answered', async () => {
      storage.failNext(Number.MAX_SAFE_INTEGER)
      const first = manager({ size: 1 })
      const [sent] = await sendAll(sender(first), 1)
      await until('an upload tried', () => storage.attempts >= 1)
      await first.stop()
      const sealed = batch(sent!)
      expect(sealed.state).to.equal('sealed')
      expect(chain.calls).to.deep.equal([])

      storage.failNext(0)
      manager({ size: 1 })
      await until('the batch pinned', () => allPinned([sent!]))
      const pinned = batch(sent!)
      expect(pinned).to.include({ id: sealed.id, hash: sealed.hash, state: 'pinned' })
      // Rebuilt from the database, the payload still matches the hash sealed by the first manager.
      expect(verifyBatch(storage.payload(pinned.payloadRef!), { batchId: sealed.id, batchHash: sealed.hash, txId: sealed.txId })).to.equal(undefined)
      expect(chain.calls).to.have.length(1)
    })

    it('seals at the next start the messages a stopped manager accepted but never sealed', async () => {
      const first = manager({ size: 10, timeoutMs: 60_000 })
      const sent = await sendAll(sender(first), 2)
      await first.stop()
      expect(messages.unbatched().map((m) => m.header.id)).to.deep.equal(sent.map((m) => m.header.id))
      expect(chain.calls).to.deep.equal([])

      manager({ size: 2 })
      await until('the resumed batch pinned', () => allPinned(sent))
      expect(manifestIds(batch(sent[0]!))).to.deep.equal(sent.map((m) => m.header.id))
      expect(chain.calls.map((c) => c.req.batchId)).to.deep.equal([batchOf(sent[0]!)])
    })
  })
})
