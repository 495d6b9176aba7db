import { expect } from 'chai'
import type { SubscriptionId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import type { Consumer, Dispatcher } from '../../../../../node/events/delivery/dispatcher.js'
import { DurableDispatchers, type SubscriptionDirectory } from '../../../../../node/events/delivery/durable.js'
import type { Subscription } from '../../../../../node/model/index.js'
import { waitUntil } from '../../../../support/wait.js'

/** A dispatcher as the durable dispatchers see it: what was attached, whether it stopped, and how it moves offsets. */
interface FakeDispatcher {
  sub: Subscription
  from: number
  consumers: Set<Consumer>
  stopped: boolean
  move: (offset: number) => void
  fail: () => void
}

const sub = (name: string, id = `00000000-0000-4000-8000-00000000000${name.length}`): Subscription =>
  ({ id: id as SubscriptionId, namespace: 'default', name, transport: 'websockets', filter: {}, options: {}, created: '2026-11-23T00:00:00Z' as Timestamp }) as Subscription
const consumer = (): Consumer => ({}) as Consumer

/**
 * The durable dispatchers over a directory and dispatchers of the test's own (their seams): which dispatcher runs for
 * which consumers as subscriptions come and go, and how the offsets they reach are stored. A failed start and a
 * restart during an offset write are in dispatcher.test.ts, over real dispatchers.
 */
describe('durable dispatchers: subscriptions coming and going, offsets stored through failures', () => {
  let subs: Map<string, Subscription>
  let stored: Map<string, number>
  let listener: ((c: { kind: 'upsert' | 'delete'; subscription: Subscription }) => void) | undefined
  let started: FakeDispatcher[]
  let reconfigured: Subscription[]
  let lines: string[]
  let save: (id: SubscriptionId, offset: number) => Promise<boolean>
  let durable: DurableDispatchers

  const directory: SubscriptionDirectory = {
    byName: (ns, name) => subs.get(`${ns}/${name}`),
    currentOffset: (id) => stored.get(id) ?? 0,
    onChange: (l) => {
      listener = l
      return () => (listener = undefined)
    },
  }
  const change = (kind: 'upsert' | 'delete', s: Subscription): void => {
    if (kind === 'upsert') subs.set(`${s.namespace}/${s.name}`, s)
    else subs.delete(`${s.namespace}/${s.name}`)
    listener?.({ kind, subscription: s })
  }

  beforeEach(() => {
    subs = new Map()
    stored = new Map()
    started = []
    reconfigured = []
    lines = []
    save = async (id, offset) => {
      stored.set(id, offset)
      return true
    }
    durable = new DurableDispatchers({
      directory,
      start: (s, from, move, fail) => {
        const d: FakeDispatcher = { sub: s, from, consumers: new Set(), stopped: false, move, fail }
        started.push(d)
        return {
          attach: (c: Consumer) => void d.consumers.add(c),
          detach: (c: Consumer) => void d.consumers.delete(c),
          stop: () => void (d.stopped = true),
        } as unknown as Dispatcher
      },
      reconfigure: (_d, s) => void reconfigured.push(s),
      saveOffset: (id, offset) => save(id, offset),
      log: (l) => lines.push(l),
    })
  })
  afterEach(() => durable.stop())

  it('waits for a subscription named before it exists, runs it for every consumer, and stops it with the last', () => {
    const a = consumer()
    const b = consumer()
    const first = durable.attach('default', 'app', a)
    expect(first.dispatcher()).to.equal(undefined)
    expect(started).to.deep.equal([])
    change('upsert', sub('app'))
    const second = durable.attach('default', 'app', b)
    expect(started).to.have.length(1)
    expect([...started[0]!.consumers]).to.deep.equal([a, b])
    expect(first.dispatcher()).to.equal(second.dispatcher())
    first.detach()
    first.detach() // twice changes nothing
    expect(started[0]!.stopped).to.equal(false)
    second.detach()
    expect(started[0]!.stopped).to.equal(true)
  })

  it('applies a replaced definition in place, restarts under a new id, and waits again once it is deleted', () => {
    const c = consumer()
    change('upsert', sub('app'))
    const attachment = durable.attach('default', 'app', c)
    const replaced = { ...sub('app'), options: { readAhead: 5 } }
    change('upsert', replaced)
    expect(reconfigured).to.deep.equal([replaced])
    expect(started).to.have.length(1)
    // Deleted and created again under a new id: a new dispatcher for the same consumers.
    change('upsert', sub('app', '00000000-0000-4000-8000-0000000000aa'))
    expect(started).to.have.length(2)
    expect(started[0]!.stopped).to.equal(true)
    expect([...started[1]!.consumers]).to.deep.equal([c])
    change('delete', sub('app', '00000000-0000-4000-8000-0000000000aa'))
    expect(started[1]!.stopped).to.equal(true)
    expect(attachment.dispatcher()).to.equal(undefined)
    // A change of a subscription no connection started starts nothing.
    change('upsert', sub('other'))
    expect(started).to.have.length(2)
  })

  it('stops a dispatcher that could not read the log, so that its consumers get a fresh one at their next start', () => {
    change('upsert', sub('app'))
    const attachment = durable.attach('default', 'app', consumer())
    started[0]!.fail()
    expect(started[0]!.stopped).to.equal(true)
    expect(attachment.dispatcher()).to.equal(undefined)
  })

  it('stores offsets as they move, retries a failed write, says once that it fails and once that it works again', async () => {
    change('upsert', sub('app'))
    durable.attach('default', 'app', consumer())
    const id = sub('app').id
    let failures = 2
    save = async (sid, offset) => {
      if (failures-- > 0) throw new Error('SQLITE_BUSY: database is locked')
      stored.set(sid, offset)
      return true
    }
    started[0]!.move(5)
    started[0]!.move(7)
    await waitUntil('the offset stored', () => stored.get(id) === 7, { intervalMs: 20 })
    expect(durable.durableOffset(id)).to.equal(7)
    expect(lines).to.deep.equal([
      `events: could not store the offset of subscription ${id}: SQLITE_BUSY: database is locked; retrying`,
      `events: subscription ${id}: offsets are stored again`,
    ])
  })

  it('says at stop which offset it could not store, and records none for a subscription gone meanwhile', async () => {
    change('upsert', sub('app'))
    durable.attach('default', 'app', consumer())
    const id = sub('app').id
    let asked = 0
    save = async () => {
      asked++
      return false // the subscription was deleted
    }
    started[0]!.move(3)
    await waitUntil('written', () => asked === 1)
    expect(durable.durableOffset(id)).to.equal(undefined)
    save = async () => {
      throw new Error('the database is closed')
    }
    started[0]!.move(9)
    await waitUntil('failing', () => lines.length === 1)
    await durable.stop()
    expect(lines).to.deep.equal([
      `events: could not store the offset of subscription ${id}: the database is closed; retrying`,
      `events: subscription ${id}: offset 9 was not stored; its events after the stored offset will be delivered again`,
    ])
    // Stopped: later changes are ignored.
    change('upsert', sub('app', '00000000-0000-4000-8000-0000000000cc'))
    expect(started).to.have.length(1)
  })
})
