import { expect } from 'chai'
import http from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import WebSocket from 'ws'
import { newId, type EventId, type SubscriptionId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import { createEventStreams } from '../../../../../node/events/stream.js'
import type { EventStreams } from '../../../../../node/events/types.js'
import { WebSocketTransport } from '../../../../../node/events/websockets/transport.js'
import { MAX_STARTS_PER_CONNECTION } from '../../../../../node/events/websockets/connection.js'
import type { SubscriptionDirectory } from '../../../../../node/events/delivery/durable.js'
import type { EnrichedEvent, EventType, NodeEvent, Subscription } from '../../../../../node/model/index.js'

type Frame = { [k: string]: unknown }

/** A client that queues the frames it receives so a test can await them in order. */
class Client {
  readonly frames: Frame[] = []
  private waiters: (() => void)[] = []
  closed: Promise<number>
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.frames.push(JSON.parse(d.toString()) as Frame)
      for (const w of this.waiters.splice(0)) w()
    })
    this.closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)))
  }
  static open(url: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url)
      const c = new Client(ws)
      ws.once('open', () => resolve(c))
      ws.once('error', reject)
    })
  }
  send(v: unknown): void {
    this.ws.send(typeof v === 'string' ? v : JSON.stringify(v))
  }
  async next(n = 1, timeoutMs = 3_000): Promise<Frame[]> {
    const deadline = Date.now() + timeoutMs
    while (this.frames.length < n) {
      if (Date.now() > deadline) throw new Error(`expected ${n} frames, have ${this.frames.length}: ${JSON.stringify(this.frames).slice(0, 300)}`)
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
    return this.frames.splice(0, n)
  }
  /** Nothing arrives within a short wait. */
  async quiet(ms = 150): Promise<void> {
    await new Promise((r) => setTimeout(r, ms))
    expect(this.frames, 'unexpected frames').to.deep.equal([])
  }
  close(): void {
    this.ws.close()
  }
}

describe('event socket (WebSocket transport over a real server)', () => {
  let log: NodeEvent[]
  let streams: EventStreams
  let transport: WebSocketTransport
  let server: http.Server
  let base: string
  let subs: Map<string, Subscription>
  let offsets: Map<string, number>
  let listeners: ((c: { kind: 'upsert' | 'delete'; subscription: Subscription }) => void)[]
  let broken: boolean
  const clients: Client[] = []

  const directory: SubscriptionDirectory = {
    byName: (ns, name) => subs.get(`${ns}/${name}`),
    currentOffset: (id) => offsets.get(id) ?? 0,
    onChange: (l) => {
      listeners.push(l)
      return () => (listeners = listeners.filter((x) => x !== l))
    },
  }

  function publish(n: number, type: EventType = 'message_confirmed', namespace = 'default'): NodeEvent[] {
    const out: NodeEvent[] = []
    for (let i = 0; i < n; i++) {
      const e: NodeEvent = { id: newId<EventId>(), sequence: log.length + 1, type, namespace, reference: newId(), topic: 't1', created: '2026-11-23T00:00:00Z' as Timestamp }
      log.push(e)
      out.push(e)
    }
    streams.published(out)
    return out
  }

  function define(name: string, options: Subscription['options'] = {}, filter: Subscription['filter'] = {}, offset = 0): Subscription {
    const existing = subs.get(`default/${name}`)
    const sub: Subscription = { id: existing?.id ?? newId<SubscriptionId>(), namespace: 'default', name, transport: 'websockets', filter, options, created: '2026-11-23T00:00:00Z' as Timestamp }
    subs.set(`default/${name}`, sub)
    if (!existing) offsets.set(sub.id, offset)
    for (const l of listeners) l({ kind: 'upsert', subscription: sub })
    return sub
  }

  async function open(path: string): Promise<Client> {
    const c = await Client.open(`${base}${path}`)
    clients.push(c)
    return c
  }

  /** Durable subscriptions x (confirmations) and y (rejections), both started on one connection. */
  async function twoStartedOnOneConnection(): Promise<{ x: Subscription; y: Subscription; c: Client }> {
    const x = define('x', {}, { events: 'confirmed' })
    const y = define('y', {}, { events: 'rejected' })
    const c = await open('/ws')
    c.send({ type: 'start', namespace: 'default', name: 'x' })
    c.send({ type: 'start', namespace: 'default', name: 'y' })
    await c.quiet(50)
    return { x, y, c }
  }

  beforeEach(async () => {
    log = []
    subs = new Map()
    offsets = new Map()
    listeners = []
    broken = false
    streams = createEventStreams(
      (ns, after, limit) => {
        if (broken) throw new Error('the database is closed')
        return log.filter((e) => e.namespace === ns && e.sequence > after).slice(0, limit)
      },
      { durableThrough: 0 },
    )
    transport = new WebSocketTransport({
      streams,
      enrich: (page) => page.map((event): EnrichedEvent => ({ event, refs: {} })),
      render: (e) => ({ id: e.event.id, sequence: e.event.sequence, type: e.event.type, namespace: e.event.namespace, topic: e.event.topic ?? '' }),
      directory,
      saveOffset: async (id, offset) => {
        offsets.set(id, offset)
        return true
      },
      lastSequence: () => log.length,
      log: () => {},
    })
    transport.start()
    server = http.createServer((_req, res) => res.end())
    server.on('upgrade', (req, socket, head) => transport.handleUpgrade(req, socket, head))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate()
    await transport.stop()
    await streams.stop()
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  })

  it('an ephemeral listener by query gets the events published after it connected, with its subscription', async () => {
    publish(2)
    const c = await open('/ws?namespace=default&ephemeral&autoack')
    await c.quiet(50)
    const [e] = publish(1)
    const [f] = await c.next()
    expect(f).to.include({ id: e!.id, sequence: 3, type: 'message_confirmed' })
    const sub = f!.subscription as { id: string; name: string; namespace: string }
    expect(sub.namespace).to.equal('default')
    expect(sub.name).to.equal(sub.id)
  })

  it('filters by query (filter.events) and ignores parameters it does not know', async () => {
    const c = await open('/ws?namespace=default&ephemeral&autoack&filter.events=rejected$&changeevents=.*')
    publish(2)
    publish(1, 'message_rejected')
    const [f] = await c.next()
    expect(f!.type).to.equal('message_rejected')
    await c.quiet()
  })

  it('waits for an ack before the next event, and stops without one', async () => {
    const c = await open('/ws')
    c.send({ type: 'start', namespace: 'default', ephemeral: true })
    await new Promise((r) => setTimeout(r, 50))
    publish(3)
    const [a] = await c.next()
    await c.quiet()
    c.send({ type: 'ack', id: a!.id, subscription: a!.subscription })
    const [b] = await c.next()
    expect(b!.sequence).to.equal(2)
  })

  it('delivers a durable subscription only once it exists, from its offset, and stores acknowledged offsets', async () => {
    const c = await open('/ws')
    c.send({ type: 'start', namespace: 'default', name: 'later' })
    publish(3)
    await c.quiet()
    const sub = define('later', { firstEvent: '1' }, {}, 1)
    const [f] = await c.next()
    expect(f!.sequence).to.equal(2)
    expect(f!.subscription).to.deep.equal({ id: sub.id, namespace: 'default', name: 'later' })
    c.send({ type: 'ack', id: f!.id })
    await c.next()
    await new Promise((r) => setTimeout(r, 20))
    expect(offsets.get(sub.id)).to.equal(2)
    expect(transport.durableOffset(sub.id)).to.equal(2)
  })

  it('two connections on one durable subscription get each of 500 events exactly once between them', async () => {
    define('shared', { readAhead: 20 }, {})
    const a = await open('/ws?namespace=default&name=shared')
    const b = await open('/api/v1/namespaces/default/ws?name=shared')
    publish(500)
    const seen: number[] = []
    const ackAll = async (c: Client): Promise<void> => {
      while (seen.length < 500) {
        const got = c.frames.splice(0)
        for (const f of got) {
          seen.push(f.sequence as number)
          c.send({ type: 'ack', id: f.id, subscription: f.subscription })
        }
        await new Promise((r) => setTimeout(r, 5))
      }
    }
    await Promise.race([Promise.all([ackAll(a), ackAll(b)]), new Promise((_, rej) => setTimeout(() => rej(new Error(`only ${seen.length} of 500`)), 10_000))])
    // A duplicate may come after the 500th event: watch both connections a while longer before counting.
    await new Promise((r) => setTimeout(r, 300))
    seen.push(...[...a.frames.splice(0), ...b.frames.splice(0)].map((f) => f.sequence as number))
    expect([...seen].sort((x, y) => x - y)).to.deep.equal(Array.from({ length: 500 }, (_, i) => i + 1))
  })

  it('a client that drops without acknowledging gets those events again on reconnect', async () => {
    define('again', { readAhead: 4 })
    publish(5)
    const a = await open('/ws?namespace=default&name=again')
    const first = await a.next(5)
    a.send({ type: 'ack', id: first[0]!.id })
    await new Promise((r) => setTimeout(r, 30))
    a.close()
    await a.closed
    const b = await open('/ws?namespace=default&name=again')
    const again = await b.next(4)
    expect(again.map((f) => f.sequence)).to.deep.equal([2, 3, 4, 5])
  })

  it('batch mode sends event_batch frames acknowledged by batch id', async () => {
    define('batched', { batch: true, readAhead: 3, batchTimeout: '20ms' })
    publish(4)
    const c = await open('/ws?namespace=default&name=batched')
    const [batch] = await c.next()
    expect(batch!.type).to.equal('event_batch')
    expect((batch!.events as Frame[]).map((e) => e.sequence)).to.deep.equal([1, 2, 3])
    c.send({ type: 'ack', id: batch!.id })
    const [rest] = await c.next()
    expect((rest!.events as Frame[]).map((e) => e.sequence)).to.deep.equal([4])
  })

  it('one connection starts several durable subscriptions; each gets its own events, acknowledged by its subscription', async () => {
    const { x, y, c } = await twoStartedOnOneConnection()
    publish(1, 'message_confirmed')
    publish(1, 'message_rejected')
    const frames = await c.next(2)
    const to = (sub: Subscription): Frame | undefined => frames.find((f) => (f.subscription as { id: string }).id === sub.id)
    expect(to(x)).to.include({ type: 'message_confirmed', sequence: 1 })
    expect(to(y)).to.include({ type: 'message_rejected', sequence: 2 })
    // Each acknowledgement names its subscription; each moves only that one's offset.
    for (const f of frames) c.send({ type: 'ack', id: f.id, subscription: f.subscription })
    publish(1, 'message_confirmed')
    publish(1, 'message_rejected')
    const next = await c.next(2)
    expect(next.map((f) => [(f.subscription as { name: string }).name, f.sequence]).sort()).to.deep.equal([
      ['x', 3],
      ['y', 4],
    ])
    await new Promise((r) => setTimeout(r, 20))
    // x acknowledged 1 and passes over 2 (not its type); y acknowledged 2 and passes over 3. Neither acknowledged
    // what it was sent next.
    expect([offsets.get(x.id), offsets.get(y.id)]).to.deep.equal([2, 3])
  })

  it('takes an ack naming its subscription by name, or giving only the event id, among several started', async () => {
    const { x, y, c } = await twoStartedOnOneConnection()
    publish(1, 'message_confirmed')
    await c.next()
    // By name alone: the oldest frame of that subscription.
    c.send({ type: 'ack', subscription: { name: 'x' } })
    publish(1, 'message_rejected')
    const [f] = await c.next()
    // By event id alone: whichever subscription sent it.
    c.send({ type: 'ack', id: f!.id })
    // Naming the subscription by an id it no longer has (deleted and made again): void, not an error.
    c.send({ type: 'ack', subscription: { id: '0f0e0d0c-0b0a-4908-8706-050403020100', name: 'x' } })
    await new Promise((r) => setTimeout(r, 50))
    expect([offsets.get(x.id), offsets.get(y.id)]).to.deep.equal([2, 2])
    // By name in another namespace: not a subscription this connection started.
    c.send({ type: 'ack', subscription: { namespace: 'other', name: 'x' } })
    expect((await c.next())[0]).to.deep.equal({ type: 'protocol_error', error: 'BAD_REQUEST: invalid ack: this connection has not started subscription {"namespace":"other","name":"x"}' })
  })

  it('a durable subscription deleted while a client is connected delivers nothing more to it', async () => {
    const sub = define('gone', {}, {})
    const c = await open('/ws?namespace=default&name=gone')
    publish(1)
    const [f] = await c.next()
    c.send({ type: 'ack', id: f!.id, subscription: f!.subscription })
    subs.delete('default/gone')
    offsets.delete(sub.id)
    for (const l of listeners) l({ kind: 'delete', subscription: sub })
    publish(2)
    await c.quiet()
  })

  const refusals: [string, string | undefined, unknown, RegExp][] = [
    ['a frame that is not JSON', '/ws', 'not json', /not JSON/],
    ['an unknown frame type', '/ws', { type: 'listen' }, /unknown frame type/],
    ['a start without namespace on /ws', '/ws', { type: 'start', ephemeral: true }, /namespace/],
    ['a start for another namespace on a namespaced socket', '/api/v1/namespaces/ns1/ws', { type: 'start', namespace: 'ns2', ephemeral: true }, /namespace/],
    ['a start neither named nor ephemeral', '/ws', { type: 'start', namespace: 'default' }, /name/],
    ['an ack of an event never sent', '/ws?namespace=default&ephemeral', { type: 'ack', id: '0f0e0d0c-0b0a-4908-8706-050403020100' }, /no event or batch/],
    ['an ack on an autoack connection', '/ws?namespace=default&ephemeral&autoack', { type: 'ack' }, /autoack/],
    ['a bad expression in a start filter', '/ws', { type: 'start', namespace: 'default', ephemeral: true, filter: { events: '(' } }, /events/],
    // A start's namespace and name are checked as the REST API checks them: each would be a key the node keeps.
    ['a start whose namespace is not a name', '/ws', { type: 'start', namespace: 'n'.repeat(60_000), ephemeral: true }, /^INVALID_FIELD: namespace must be 1-64 letters/],
    ['a durable start whose name is not a name', '/ws', { type: 'start', namespace: 'default', name: 'x'.repeat(60_000) }, /^INVALID_FIELD: name must be 1-64 letters/],
    ['a durable start named by a UUID', '/ws', { type: 'start', namespace: 'default', name: '0f0e0d0c-0b0a-4908-8706-050403020100' }, /^INVALID_FIELD: name must not be a UUID/],
    // Frames out of shape, field by field.
    ['a frame that is not an object', '/ws', '[1]', /^BAD_REQUEST: invalid frame: expected a JSON object with a "type"$/],
    ['a frame whose type is not a string', '/ws', { type: 1 }, /^BAD_REQUEST: invalid frame: "type" must be a string \("start" or "ack"\)$/],
    ['a start whose name is not a string', '/ws', { type: 'start', namespace: 'default', name: 5 }, /^BAD_REQUEST: invalid frame: "name" must be a string$/],
    ['a start whose autoack is not a boolean', '/ws', { type: 'start', namespace: 'default', ephemeral: true, autoack: 'yes' }, /^BAD_REQUEST: invalid frame: "autoack" must be true or false$/],
    ['an ack whose subscription is not an object', '/ws?namespace=default&ephemeral', { type: 'ack', subscription: 'app' }, /^BAD_REQUEST: invalid ack: "subscription" must be an object \{id\?, namespace, name\}$/],
    // What a connection asks against what it started.
    ['a start changing autoack', '/ws?namespace=default&ephemeral&autoack', { type: 'start', namespace: 'default', ephemeral: true, autoack: false }, /^BAD_REQUEST: invalid start: autoack must be the same for every start on a connection \(it is true\)$/],
    ['an ack naming a subscription not started here', '/ws?namespace=default&ephemeral', { type: 'ack', subscription: { name: 'other' } }, /^BAD_REQUEST: invalid ack: this connection has not started subscription \{"name":"other"\}$/],
    ['an ack with nothing awaiting acknowledgement', '/ws?namespace=default&ephemeral', { type: 'ACK' }, /^BAD_REQUEST: invalid ack: nothing is awaiting acknowledgement on this connection$/],
  ]
  for (const [what, path, frame, error] of refusals) {
    it(`answers ${what} with protocol_error and closes the socket`, async () => {
      const c = await open(path!)
      await new Promise((r) => setTimeout(r, 20))
      c.send(frame)
      const [f] = await c.next()
      expect(f!.type).to.equal('protocol_error')
      expect(f!.error).to.match(error)
      expect(await c.closed).to.equal(1008)
    })
  }

  it(`refuses a start past ${MAX_STARTS_PER_CONNECTION} on one connection, naming the limit; a repeated durable start is not counted`, async () => {
    const c = await open('/ws')
    const half = MAX_STARTS_PER_CONNECTION / 2
    for (let i = 0; i < half; i++) c.send({ type: 'start', namespace: 'default', ephemeral: true, autoack: true })
    // Durable names that do not exist are accepted (nothing is delivered until they do), each sent twice.
    for (let i = 0; i < half; i++) for (let k = 0; k < 2; k++) c.send({ type: 'start', namespace: 'default', name: `app${i}` })
    await c.quiet()
    c.send({ type: 'start', namespace: 'default', ephemeral: true })
    const [f] = await c.next()
    expect(f).to.deep.equal({
      type: 'protocol_error',
      error: `BAD_REQUEST: invalid start: an event socket may start at most ${MAX_STARTS_PER_CONNECTION} subscriptions (MAX_STARTS_PER_CONNECTION) and this one has; open another connection for more`,
    })
    expect(await c.closed).to.equal(1008)
    // The limit is the connection's: a new one starts afresh.
    const d = await open('/ws?namespace=default&ephemeral&autoack')
    publish(1)
    expect((await d.next())[0]!.sequence).to.equal(1)
  })

  it('answers a binary frame, and an ack that names no subscription among several, with protocol_error', async () => {
    const binary = await open('/ws?namespace=default&ephemeral')
    binary.ws.send(Buffer.from('{"type":"ack"}'), { binary: true })
    expect((await binary.next())[0]).to.deep.equal({ type: 'protocol_error', error: 'BAD_REQUEST: invalid frame: binary frames are not understood; send JSON text' })
    expect(await binary.closed).to.equal(1008)

    const several = await open('/ws?namespace=default&ephemeral')
    several.send({ type: 'start', namespace: 'default', ephemeral: true })
    several.send({ type: 'ack' })
    expect((await several.next())[0]).to.deep.equal({
      type: 'protocol_error',
      error: 'BAD_REQUEST: invalid ack: this connection has several subscriptions started; name one in "subscription" or give the event "id"',
    })
    expect(await several.closed).to.equal(1008)
  })

  it('answers a bad expression in the query with protocol_error', async () => {
    const c = await open('/ws?namespace=default&ephemeral&filter.message.tag=%28')
    const [f] = await c.next()
    expect(f!.type).to.equal('protocol_error')
    expect(f!.error).to.match(/tag/)
  })

  it('answers a bad name or namespace in the query with protocol_error', async () => {
    for (const [query, error] of [
      ['namespace=default&name=-bad', /^INVALID_FIELD: name must be 1-64 letters/],
      [`namespace=${'n'.repeat(100)}&ephemeral`, /^INVALID_FIELD: namespace must be 1-64 letters/],
    ] as const) {
      const c = await open(`/ws?${query}`)
      const [f] = await c.next()
      expect(f!.type).to.equal('protocol_error')
      expect(f!.error).to.match(error)
      expect(await c.closed).to.equal(1008)
    }
  })

  it('refuses an upgrade on any other path with a JSON 404', async () => {
    const err = await Client.open(`${base}/api/v1/ws`).then(
      () => undefined,
      (e: Error) => e,
    )
    expect(err?.message).to.match(/404/)
  })

  /** Raw bytes to the server; resolves with what came back once the server closed the socket. */
  function raw(request: string, reset = false): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(Number(new URL(base.replace('ws:', 'http:')).port), '127.0.0.1', () => {
        socket.write(request)
        if (reset) socket.resetAndDestroy()
      })
      const chunks: Buffer[] = []
      socket.on('data', (c: Buffer) => chunks.push(c))
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
      socket.on('error', () => resolve(''))
    })
  }
  const upgrade = (target: string): string =>
    `GET ${target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`

  it('answers an upgrade whose target is not a URL with 400, and lives on', async () => {
    expect(await raw(upgrade('http://[/ws'))).to.match(/^HTTP\/1\.1 400 /)
    expect((await open('/ws')).ws.readyState).to.equal(WebSocket.OPEN)
  })

  it('survives clients that reset the connection while being refused, and closes refused sockets itself', async () => {
    await Promise.all(Array.from({ length: 50 }, () => raw(upgrade('/nope'), true)))
    // The client keeps its side open: the answer arrives and the server closes the socket.
    expect(await raw(upgrade('/nope'))).to.match(/^HTTP\/1\.1 404 /)
    expect((await open('/ws')).ws.readyState).to.equal(WebSocket.OPEN)
  })

  it('ends a connection whose subscription can no longer read the log, so that its client reconnects', async () => {
    const c = await open('/ws?namespace=default&ephemeral&autoack')
    broken = true
    publish(1)
    expect(await c.closed).to.equal(1011)
  })

  it('answers pings', async () => {
    const c = await open('/ws')
    const pong = new Promise<void>((resolve) => c.ws.once('pong', () => resolve()))
    c.ws.ping()
    await pong
  })
})
