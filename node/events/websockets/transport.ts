import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Socket } from 'node:net'
import { WebSocketServer, type WebSocket } from 'ws'
import { ParleyError, errorMessage } from '../../core/errors.js'
import { writeRaw } from '../../core/listen.js'
import { newId, type SubscriptionId } from '../../core/ids.js'
import type { Subscription, SubscriptionRef } from '../../model/index.js'
import type { EventEnricher, EventRenderer, EventStreams, EventTransport } from '../types.js'
import { Dispatcher, type Consumer } from '../delivery/dispatcher.js'
import { DurableDispatchers, type SubscriptionDirectory } from '../delivery/durable.js'
import { deliveryShape, startOffset } from '../delivery/shape.js'
import { compileFilter } from '../filter.js'
import { parseSubscriptionFilter, parseSubscriptionOptions } from '../subscription-input.js'
import { Connection, type ConnectionHost } from './connection.js'
import type { StartFrame } from './frames.js'
import { eventSocketPath, invalidNamespace, validNamespace } from './paths.js'
import { startFromQuery } from './query.js'

/** Client frames are starts and acks: a few hundred bytes. Anything near this is not one. */
const MAX_CLIENT_FRAME = 64 * 1024
/** Open event sockets per node; past it an upgrade is refused with 503 rather than letting sockets exhaust the process. */
const MAX_CONNECTIONS = 1_000
/** Pings every interval; a connection that has not answered the previous one is dropped (FireFly's SDK pings every 30 s). */
const HEARTBEAT_MS = 30_000

export interface WebSocketTransportOptions {
  streams: EventStreams
  enrich: EventEnricher
  render: EventRenderer
  directory: SubscriptionDirectory
  /** Stores a durable subscription's offset; resolves once durable, false when the subscription is gone. */
  saveOffset(id: SubscriptionId, offset: number): Promise<boolean>
  /** The event log's last sequence: where an ephemeral listener starts by default (`newest`). */
  lastSequence(): number
  log: (line: string) => void
}

/**
 * Events over WebSockets, FireFly's protocol (docs/api.md, Events over WebSockets): `/ws` and `/api/v1/namespaces/{ns}/ws` on the API's port, ephemeral
 * listeners and durable subscriptions, acknowledgements, batches. It attaches to the API server's upgrades; the
 * delivery itself (offsets, read-ahead, redelivery) is the dispatchers'.
 */
export class WebSocketTransport implements EventTransport {
  readonly name = 'websockets'
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME, perMessageDeflate: false, clientTracking: false })
  private readonly connections = new Set<Connection>()
  private readonly durable: DurableDispatchers
  private heartbeat: NodeJS.Timeout | undefined
  private stopped = false
  private readonly host: ConnectionHost

  constructor(private readonly o: WebSocketTransportOptions) {
    this.durable = new DurableDispatchers({
      directory: o.directory,
      start: (sub, offset, offsetMoved, failed) => this.dispatcher(refOf(sub), sub.filter, sub.options, offset, offsetMoved, failed),
      reconfigure: (d, sub) => d.reconfigure(compileFilter(sub.filter), deliveryShape(sub.options)),
      saveOffset: o.saveOffset,
      log: o.log,
    })
    this.host = {
      ephemeral: (namespace, frame, consumer) => this.ephemeral(namespace, frame, consumer),
      durable: (namespace, name, consumer) => this.durable.attach(namespace, name, consumer),
      closed: (c) => this.connections.delete(c),
      log: o.log,
    }
  }

  start(): void {
    this.heartbeat = setInterval(() => {
      for (const c of this.connections) c.ping()
    }, HEARTBEAT_MS)
    this.heartbeat.unref()
  }

  /** The offset last made durable for a subscription being delivered; undefined: the stored one is current. */
  durableOffset(id: SubscriptionId): number | undefined {
    return this.durable.durableOffset(id)
  }

  /**
   * The API server's `upgrade` event for WebSocket upgrades. Paths other than the event socket's are answered 404.
   * Never throws: whatever a client sends, the answer is an HTTP refusal or a WebSocket.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Node stops listening for errors on a socket it hands over; a client that resets it mid-answer must not
    // become an unhandled 'error' that ends the process.
    socket.on('error', () => socket.destroy())
    try {
      this.upgrade(req, socket, head)
    } catch (err) {
      this.o.log(`events: refused an upgrade: ${errorMessage(err)}`)
      writeRaw(socket, 400, 'Bad Request', new ParleyError('BAD_REQUEST', 'the upgrade request could not be understood'))
    }
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = URL.canParse(req.url ?? '/', 'http://localhost') ? new URL(req.url ?? '/', 'http://localhost') : undefined
    if (!url) return writeRaw(socket, 400, 'Bad Request', new ParleyError('BAD_REQUEST', 'the request target is not a valid URL'))
    const path = eventSocketPath(url.pathname)
    if (!path) return writeRaw(socket, 404, 'Not Found', new ParleyError('NOT_FOUND', `no WebSocket endpoint at ${url.pathname.slice(0, 200)}; events are at /ws and /api/v1/namespaces/{ns}/ws`))
    if (path.namespace !== undefined && !validNamespace(path.namespace)) {
      return writeRaw(socket, 400, 'Bad Request', invalidNamespace(path.namespace))
    }
    if (this.stopped) return writeRaw(socket, 503, 'Service Unavailable', new ParleyError('UNAVAILABLE', 'the node is stopping'))
    if (this.connections.size >= MAX_CONNECTIONS) {
      return writeRaw(socket, 503, 'Service Unavailable', new ParleyError('UNAVAILABLE', `this node already has ${MAX_CONNECTIONS} event sockets open`))
    }
    this.wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      if (this.stopped) {
        ws.terminate()
        return
      }
      const c = new Connection(ws, socket as Socket, path.namespace, this.host)
      this.connections.add(c)
      let start: StartFrame | undefined
      try {
        start = startFromQuery(url.searchParams)
      } catch (err) {
        // A bad filter in the query: the same protocol_error a bad start frame gets.
        c.fail(err)
        return
      }
      if (start) c.start(start)
    })
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.heartbeat)
    const closing = [...this.connections].map((c) => c.close(1001, 'node stopping'))
    this.connections.clear()
    await Promise.all([this.durable.stop(), ...closing])
    this.wss.close()
  }

  private ephemeral(namespace: string, frame: StartFrame, consumer: Consumer): Dispatcher {
    const filter = parseSubscriptionFilter(frame.filter ?? {})
    const options = parseSubscriptionOptions(frame.options ?? {})
    const id = newId<SubscriptionId>()
    const after = startOffset(options.firstEvent, this.o.lastSequence())
    const d = this.dispatcher({ id, namespace, name: id }, filter, options, after)
    d.attach(consumer)
    return d
  }

  private dispatcher(
    ref: SubscriptionRef,
    filter: Subscription['filter'],
    options: Subscription['options'],
    after: number,
    offsetMoved?: (offset: number) => void,
    failed?: () => void,
  ): Dispatcher {
    return new Dispatcher({
      ref,
      after,
      matcher: compileFilter(filter),
      ...deliveryShape(options),
      streams: this.o.streams,
      enrich: this.o.enrich,
      render: this.o.render,
      ...(offsetMoved ? { offsetMoved } : {}),
      ...(failed ? { failed } : {}),
      log: this.o.log,
    })
  }
}

function refOf(sub: Subscription): SubscriptionRef {
  return { id: sub.id, namespace: sub.namespace, name: sub.name }
}
