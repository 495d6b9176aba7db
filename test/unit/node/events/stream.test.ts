import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from '../../../../node/db/database.js'
import type { EventsRepo } from '../../../../node/db/repos/events.js'
import { newId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { createEventStreams, type EventReader, type EventStreams, type EventStreamsOptions } from '../../../../node/events/index.js'
import type { NodeEvent } from '../../../../node/model/index.js'
import { openRepos } from '../../../support/repos.js'

const PENDING = Symbol('pending')

/**
 * What `p` has settled to once everything already runnable has run, or PENDING. setImmediate lets every queued
 * microtask (a woken stream's read and resolve) finish first; the race with a resolved promise then answers
 * without waiting on any clock.
 */
async function peek<T>(p: Promise<T>): Promise<T | typeof PENDING> {
  await new Promise<void>((r) => setImmediate(r))
  return Promise.race([p, Promise.resolve(PENDING)])
}

async function take(it: AsyncIterator<NodeEvent>, n: number): Promise<NodeEvent[]> {
  const out: NodeEvent[] = []
  while (out.length < n) {
    const r = await it.next()
    if (r.done) throw new Error(`stream ended after ${out.length} of ${n} events`)
    out.push(r.value)
  }
  return out
}

const seqs = (es: readonly NodeEvent[]): number[] => es.map((e) => e.sequence)

/** Event streams over a real (temporary) database's event log. */
describe('event streams', () => {
  let dir: string
  let db: Database
  let repo: EventsRepo
  let streams: EventStreams
  let reads: number
  /** Replaces the reader for one test; the default reads the repo. */
  let readVia: EventReader | undefined

  const reader: EventReader = (ns, after, limit) => {
    reads++
    return readVia ? readVia(ns, after, limit) : repo.after(ns, after, limit)
  }

  function open(opts?: EventStreamsOptions): EventStreams {
    streams = createEventStreams(reader, opts)
    return streams
  }

  /** Inserts `n` events of `ns` in one transaction and waits until it is durable (not yet published). */
  function insert(ns: string, n: number): Promise<NodeEvent[]> {
    return db.transaction((tx) => Array.from({ length: n }, () => repo.insert(tx, { type: 'message_confirmed', namespace: ns, reference: newId() }, now())))
  }

  /** Inserts and publishes, as the aggregator and node do. */
  async function emit(ns: string, n: number): Promise<NodeEvent[]> {
    const es = await insert(ns, n)
    streams.published(es)
    return es
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-events-'))
    ;({ db, events: repo } = await openRepos(dir))
    reads = 0
    readVia = undefined
    open()
  })
  afterEach(async () => {
    await streams.stop()
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('catches up from after = 0 and from a middle sequence, in order', async () => {
    const es = [...(await emit('default', 3)), ...(await emit('other', 2)), ...(await emit('default', 4))]
    const mine = es.filter((e) => e.namespace === 'default')

    const all = streams.stream({ namespace: 'default', after: 0 })
    expect(seqs(await take(all, 7))).to.deep.equal(seqs(mine))
    expect(await peek(all.next())).to.equal(PENDING)

    const middle = mine[2]!.sequence
    const rest = streams.stream({ namespace: 'default', after: middle, pageSize: 2 })
    const got = await take(rest, 4)
    expect(seqs(got)).to.deep.equal(seqs(mine.slice(3)))
    expect(got[0]).to.deep.equal(mine[3])
  })

  it('waits without reading until published() wakes it', async () => {
    const it = streams.stream({ namespace: 'default', after: 0 })
    const first = it.next()
    expect(await peek(first)).to.equal(PENDING)
    const readsWhileWaiting = reads

    // Durable but not published: the stream must not notice on its own (it does not poll).
    const [e] = await insert('default', 1)
    expect(await peek(first)).to.equal(PENDING)
    expect(reads).to.equal(readsWhileWaiting)

    streams.published([e!])
    expect(await first).to.deep.equal({ done: false, value: e })
  })

  it('is neither woken by nor given events of another namespace', async () => {
    const it = streams.stream({ namespace: 'a', after: 0 })
    const first = it.next()
    expect(await peek(first)).to.equal(PENDING)
    const before = reads

    await emit('b', 5)
    expect(await peek(first)).to.equal(PENDING)
    expect(reads).to.equal(before)

    const [e] = await emit('a', 1)
    expect((await first).value).to.deep.equal(e)
    expect(await peek(it.next())).to.equal(PENDING)
  })

  it('delivers many events published at once in order, without duplicates, to every stream', async () => {
    const big = streams.stream({ namespace: 'default', after: 0 })
    const small = streams.stream({ namespace: 'default', after: 0, pageSize: 7 })
    const bigFirst = big.next()
    const smallFirst = small.next()
    expect(await peek(bigFirst)).to.equal(PENDING)

    const es = await emit('default', 450)
    const fromBig = [(await bigFirst).value as NodeEvent, ...(await take(big, 449))]
    const fromSmall = [(await smallFirst).value as NodeEvent, ...(await take(small, 449))]
    expect(seqs(fromBig)).to.deep.equal(seqs(es))
    expect(seqs(fromSmall)).to.deep.equal(seqs(es))
    expect(await peek(big.next())).to.equal(PENDING)
    expect(await peek(small.next())).to.equal(PENDING)
  })

  it('yields nothing twice when published() repeats events it already returned', async () => {
    const es = await emit('default', 3)
    const it = streams.stream({ namespace: 'default', after: 0 })
    expect(seqs(await take(it, 3))).to.deep.equal(seqs(es))
    const next = it.next()
    streams.published(es)
    streams.published(es)
    expect(await peek(next)).to.equal(PENDING)
    const [e] = await emit('default', 1)
    expect((await next).value).to.deep.equal(e)
  })

  it('does not lose an event published between its empty read and its wait (generation noted before the read)', async () => {
    let injected: NodeEvent | undefined
    readVia = (ns, after, limit) => {
      const rows = repo.after(ns, after, limit)
      if (rows.length === 0 && !injected) {
        // The transaction function runs synchronously, so the row is committed in memory now; publishing it
        // before returning the empty page is the worst case: the wake happens before the stream waits.
        void db.transaction((tx) => {
          injected = repo.insert(tx, { type: 'message_confirmed', namespace: ns, reference: newId() }, now())
        })
        streams.published([injected!])
      }
      return rows
    }
    const it = streams.stream({ namespace: 'default', after: 0 })
    const r = await peek(it.next())
    expect(r).to.not.equal(PENDING)
    expect(r).to.deep.equal({ done: false, value: injected })
  })

  it('does not lose an event inserted after its empty read and published once durable', async () => {
    let published: Promise<NodeEvent[]> | undefined
    readVia = (ns, after, limit) => {
      const rows = repo.after(ns, after, limit)
      if (rows.length === 0 && !published) published = emit(ns, 1)
      return rows
    }
    const it = streams.stream({ namespace: 'default', after: 0 })
    const r = await it.next()
    const [e] = await published!
    expect(r).to.deep.equal({ done: false, value: e })
  })

  it('holds back an event committed in memory until it is published as durable', async () => {
    const earlier = await insert('default', 2)
    await streams.stop()
    open({ durableThrough: earlier[1]!.sequence })
    const it = streams.stream({ namespace: 'default', after: 0 })
    expect(seqs(await take(it, 2))).to.deep.equal(seqs(earlier))

    // Visible to reads at once, durable only when the promise resolves. Both streams read while it is in
    // flight: the fresh one on its first next(), the old one woken by a repeated publish of what it has.
    const pending = insert('default', 1)
    const fresh = streams.stream({ namespace: 'default', after: 0 })
    const freshNext = take(fresh, 3)
    const next = it.next()
    const before = reads
    streams.published(earlier)
    expect(await peek(next)).to.equal(PENDING)
    expect(await peek(freshNext)).to.equal(PENDING)
    expect(reads).to.be.greaterThan(before)
    const [e] = await pending
    expect(await peek(next)).to.equal(PENDING)
    streams.published([e!])
    expect(await next).to.deep.equal({ done: false, value: e })
    expect(seqs(await freshNext)).to.deep.equal(seqs([...earlier, e!]))
  })

  it('ends on abort, also for a pending next() and a signal aborted before it starts', async () => {
    await emit('default', 1)
    const ac = new AbortController()
    const it = streams.stream({ namespace: 'default', after: 0, signal: ac.signal })
    await take(it, 1)
    const pending = it.next()
    expect(await peek(pending)).to.equal(PENDING)
    ac.abort()
    expect(await pending).to.deep.equal({ done: true, value: undefined })
    expect(await it.next()).to.deep.equal({ done: true, value: undefined })

    const before = reads
    const late = streams.stream({ namespace: 'default', after: 0, signal: AbortSignal.abort() })
    expect(await late.next()).to.deep.equal({ done: true, value: undefined })
    expect(reads).to.equal(before)
  })

  it('ends on return(), also for a pending next() and a for-await that breaks', async () => {
    const es = await emit('default', 3)
    const it = streams.stream({ namespace: 'default', after: 0 })
    await take(it, 3)
    const pending = it.next()
    expect(await peek(pending)).to.equal(PENDING)
    expect(await it.return!()).to.deep.equal({ done: true, value: undefined })
    expect(await pending).to.deep.equal({ done: true, value: undefined })
    expect(await it.next()).to.deep.equal({ done: true, value: undefined })

    const looped: number[] = []
    const again = streams.stream({ namespace: 'default', after: 0 })
    for await (const e of again) {
      looped.push(e.sequence)
      if (looped.length === 2) break
    }
    expect(looped).to.deep.equal(seqs(es.slice(0, 2)))
    expect(await again.next()).to.deep.equal({ done: true, value: undefined })
  })

  it('stop() ends every stream, later streams end at once, and the reader is not called again', async () => {
    const a = streams.stream({ namespace: 'a', after: 0 })
    const b = streams.stream({ namespace: 'b', after: 0 })
    const pa = a.next()
    const pb = b.next()
    expect(await peek(pa)).to.equal(PENDING)
    await streams.stop()
    expect(await pa).to.deep.equal({ done: true, value: undefined })
    expect(await pb).to.deep.equal({ done: true, value: undefined })

    const before = reads
    const late = streams.stream({ namespace: 'a', after: 0 })
    expect(await late.next()).to.deep.equal({ done: true, value: undefined })
    const es = await insert('a', 1)
    streams.published(es)
    await peek(Promise.resolve())
    expect(reads).to.equal(before)
  })

  it('rejects next() when the reader throws (database closed), then is done', async () => {
    const [e] = await emit('default', 1)
    const it = streams.stream({ namespace: 'default', after: 0 })
    const other = streams.stream({ namespace: 'default', after: e!.sequence })
    const otherNext = other.next()
    expect(await peek(otherNext)).to.equal(PENDING)
    await db.close()
    let thrown: unknown
    try {
      await it.next()
    } catch (err) {
      thrown = err
    }
    expect(thrown).to.be.instanceOf(Error)
    expect((thrown as Error).message).to.match(/DB_CLOSED/)
    expect(await it.next()).to.deep.equal({ done: true, value: undefined })
    // The waiting stream is untouched until it reads.
    expect(await peek(otherNext)).to.equal(PENDING)
  })

  it('refuses an unusable start or page size', () => {
    expect(() => streams.stream({ namespace: 'default', after: -1 })).to.throw(/after must be an integer/)
    expect(() => streams.stream({ namespace: 'default', after: 1.5 })).to.throw(/after must be an integer/)
    expect(() => streams.stream({ namespace: 'default', after: 0, pageSize: 0 })).to.throw(/pageSize/)
  })
})
