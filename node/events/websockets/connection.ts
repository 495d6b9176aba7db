import type { Socket } from 'node:net'
import type { WebSocket } from 'ws'
import { ParleyError, errorMessage, isParleyError } from '../../core/errors.js'
import { newId, type Uuid } from '../../core/ids.js'
import type { Consumer, Dispatcher } from '../delivery/dispatcher.js'
import type { DurableAttachment } from '../delivery/durable.js'
import { parseSubscriptionName } from '../subscription-input.js'
import { parseClientFrame, type AckFrame, type StartFrame } from './frames.js'
import { invalidNamespace, validNamespace } from './paths.js'

/**
 * Bytes sent and not yet handed to the kernel past which a connection takes no more frames: a client that stops
 * reading holds this much of the node's memory, plus one page of events per subscription, and no more.
 */
export const SEND_HIGH_WATER = 1 << 20
/** Pings unanswered before a connection is dropped; with the transport's 30 s interval, 90-120 s of silence. */
const MISSED_PINGS = 3
/** How long a client gets to answer the server's close before its socket is cut (aborted, or the node stopping). */
const CLOSE_GRACE_MS = 1_000
/**
 * Starts one connection may make (a repeated durable start is not one). Each holds memory for as long as the
 * connection lives (an ephemeral one a dispatcher and a page of up to 200 events, a durable one its place in the
 * durable registry), and nothing but closing the connection ends a start, so without a bound one socket could grow
 * the node without end. An application with more subscriptions opens more connections.
 */
export const MAX_STARTS_PER_CONNECTION = 100

/** What a connection asks of the transport to begin delivering. */
export interface ConnectionHost {
  /** Starts an ephemeral subscription for the connection; throws a ParleyError for a bad filter or options. */
  ephemeral(namespace: string, frame: StartFrame, consumer: Consumer): Dispatcher
  durable(namespace: string, name: string, consumer: Consumer): DurableAttachment
  closed(c: Connection): void
  log: (line: string) => void
}

type Started =
  | { kind: 'durable'; namespace: string; name: string; attachment: DurableAttachment }
  | { kind: 'ephemeral'; namespace: string; dispatcher: Dispatcher }

/**
 * One application's event socket (FireFly's `websocketConnection`): its starts, its acknowledgements and its
 * back-pressure. Any frame it cannot act on gets a `protocol_error` and the connection is closed, as FireFly does.
 */
export class Connection implements Consumer {
  readonly id = newId<Uuid>()
  private autoackChosen: boolean | undefined
  private pendingBytes = 0
  private readonly started: Started[] = []
  /** The durable subscriptions in `started`, by durableKey: a repeated start is found without a scan. */
  private readonly durableKeys = new Set<string>()
  private closed = false
  /** Pings sent since the last pong. */
  private missed = 0

  /** Frames sent in one turn of the event loop leave in one write: the socket is corked until the next tick. */
  private corked = false

  constructor(
    private readonly ws: WebSocket,
    private readonly socket: Socket,
    /** The namespace of `/api/v1/namespaces/{ns}/ws`; undefined on `/ws`. */
    private readonly scope: string | undefined,
    private readonly host: ConnectionHost,
  ) {
    ws.on('message', (data, isBinary) => this.received(isBinary ? undefined : data.toString()))
    ws.on('close', () => this.cleanUp())
    ws.on('error', () => this.cleanUp())
    ws.on('pong', () => (this.missed = 0))
  }

  get autoack(): boolean {
    return this.autoackChosen ?? false
  }

  ready(): boolean {
    return !this.closed && this.pendingBytes < SEND_HIGH_WATER
  }

  send(frame: string): void {
    if (this.closed) return
    const bytes = frame.length
    this.pendingBytes += bytes
    if (!this.corked) {
      this.corked = true
      this.socket.cork()
      process.nextTick(() => {
        this.corked = false
        this.socket.uncork()
      })
    }
    this.ws.send(frame, () => {
      const wasFull = this.pendingBytes >= SEND_HIGH_WATER
      this.pendingBytes -= bytes
      if (wasFull && this.pendingBytes < SEND_HIGH_WATER) this.drained()
    })
  }

  abort(reason: string): void {
    void this.close(1011, reason.slice(0, 120))
  }

  /** Handles a start asked for by the connection's query, as if it were its first frame. */
  start(frame: StartFrame): void {
    this.act(() => this.onStart(frame))
  }

  /** Refuses what the connection asked before any frame (its query): `protocol_error`, then closed. */
  fail(err: unknown): void {
    this.protocolError(err)
  }

  /** Ends the connection from the server's side (the node stopping); resolves once its socket is closed. */
  close(code: number, reason: string): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      if (this.ws.readyState === this.ws.CLOSED) resolve()
      else this.ws.once('close', () => resolve())
    })
    this.ws.close(code, reason)
    this.cleanUp()
    // A client that does not answer the close handshake is cut off rather than holding the node's stop.
    const timer = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS)
    return closed.finally(() => clearTimeout(timer))
  }

  /**
   * Heartbeat: a connection that has answered none of the last MISSED_PINGS pings is gone (a client merely slow to
   * read, whose pongs queue behind its unread frames, gets that long to catch up).
   */
  ping(): void {
    if (this.closed) return
    if (this.missed >= MISSED_PINGS) {
      this.ws.terminate()
      this.cleanUp()
      return
    }
    this.missed++
    try {
      this.ws.ping()
    } catch {
      this.cleanUp()
    }
  }

  private received(text: string | undefined): void {
    if (this.closed) return
    this.act(() => {
      if (text === undefined) throw new ParleyError('BAD_REQUEST', 'invalid frame: binary frames are not understood; send JSON text')
      const frame = parseClientFrame(text)
      if (frame.type === 'start') this.onStart(frame)
      else this.onAck(frame)
    })
  }

  private act(fn: () => void): void {
    try {
      fn()
    } catch (err) {
      this.protocolError(err)
    }
  }

  private protocolError(err: unknown): void {
    const error = isParleyError(err) ? `${err.code}: ${err.message}` : `INTERNAL: ${errorMessage(err)}`
    if (!isParleyError(err)) this.host.log(`events: websocket ${this.id}: ${errorMessage(err)}`)
    if (!this.closed) this.ws.send(JSON.stringify({ type: 'protocol_error', error }) + '\n')
    this.ws.close(1008, 'protocol error')
    this.cleanUp()
  }

  private onStart(frame: StartFrame): void {
    // Checked as the REST API checks them, before anything is held: a name and namespace become a key the node keeps
    // while the connection lives, so their size is bounded, and one no subscription could have is refused, not awaited.
    if (frame.namespace !== undefined && !validNamespace(frame.namespace)) throw invalidNamespace(frame.namespace)
    const namespace = frame.namespace ?? this.scope
    if (namespace === undefined) throw new ParleyError('BAD_REQUEST', 'invalid start: "namespace" is required on /ws')
    if (this.scope !== undefined && namespace !== this.scope) {
      throw new ParleyError('BAD_REQUEST', `invalid start: namespace ${JSON.stringify(namespace)} on a socket opened for namespace ${JSON.stringify(this.scope)}`)
    }
    if (!frame.name && !frame.ephemeral) throw new ParleyError('BAD_REQUEST', 'invalid start: give the "name" of a durable subscription, or "ephemeral": true')
    const autoack = frame.autoack ?? false
    if (this.autoackChosen !== undefined && frame.autoack !== undefined && autoack !== this.autoackChosen) {
      throw new ParleyError('BAD_REQUEST', `invalid start: autoack must be the same for every start on a connection (it is ${this.autoackChosen})`)
    }
    if (frame.ephemeral) {
      this.checkStartLimit()
      this.autoackChosen ??= autoack
      this.started.push({ kind: 'ephemeral', namespace, dispatcher: this.host.ephemeral(namespace, frame, this) })
      return
    }
    const name = parseSubscriptionName(frame.name)
    const key = durableKey(namespace, name)
    // A client that reconnects re-sends its starts; a repeat on one connection changes nothing, and is not counted.
    if (this.durableKeys.has(key)) return
    this.checkStartLimit()
    this.autoackChosen ??= autoack
    this.started.push({ kind: 'durable', namespace, name, attachment: this.host.durable(namespace, name, this) })
    this.durableKeys.add(key)
  }

  /** Refuses a start past MAX_STARTS_PER_CONNECTION. */
  private checkStartLimit(): void {
    if (this.started.length < MAX_STARTS_PER_CONNECTION) return
    throw new ParleyError(
      'BAD_REQUEST',
      `invalid start: an event socket may start at most ${MAX_STARTS_PER_CONNECTION} subscriptions (MAX_STARTS_PER_CONNECTION) and this one has; open another connection for more`,
    )
  }

  private onAck(frame: AckFrame): void {
    if (this.autoack) throw new ParleyError('BAD_REQUEST', 'invalid ack: this connection started with autoack, so it must not acknowledge')
    const candidates = frame.subscription ? this.started.filter((s) => names(s, frame.subscription!)) : this.started
    if (frame.subscription && candidates.length === 0) {
      throw new ParleyError('BAD_REQUEST', `invalid ack: this connection has not started subscription ${JSON.stringify(frame.subscription)}`)
    }
    // It names, by id, a durable subscription this connection started under a name that now belongs to another (it
    // was deleted, maybe recreated): what that one sent is void, and must not settle the new one's events.
    const staleId = frame.subscription?.id
    if (staleId !== undefined && candidates.every((s) => dispatcherOf(s)?.ref.id !== staleId)) return
    const running = candidates.map(dispatcherOf)
    // A durable subscription deleted or restarted under the connection: what it had sent is void, not an error.
    const stale = running.some((d) => d === undefined)
    const live = running.filter((d): d is Dispatcher => d !== undefined)
    let target: Dispatcher | undefined
    if (frame.id !== undefined) target = live.find((d) => d.holds(this, frame.id!))
    else if (live.length === 1) target = live[0]
    else if (live.length > 1) throw new ParleyError('BAD_REQUEST', 'invalid ack: this connection has several subscriptions started; name one in "subscription" or give the event "id"')
    if (target && target.ack(this, frame.id) === 'acked') return
    if (stale) return
    throw new ParleyError('BAD_REQUEST', frame.id !== undefined ? `invalid ack: no event or batch ${JSON.stringify(frame.id).slice(0, 80)} is awaiting acknowledgement on this connection` : 'invalid ack: nothing is awaiting acknowledgement on this connection')
  }

  private drained(): void {
    for (const s of this.started) dispatcherOf(s)?.consumerReady()
  }

  private cleanUp(): void {
    if (this.closed) return
    this.closed = true
    for (const s of this.started) {
      if (s.kind === 'durable') s.attachment.detach()
      else s.dispatcher.stop()
    }
    this.started.length = 0
    this.durableKeys.clear()
    this.host.closed(this)
  }
}

function durableKey(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`
}

function dispatcherOf(s: Started): Dispatcher | undefined {
  return s.kind === 'durable' ? s.attachment.dispatcher() : s.dispatcher
}

function names(s: Started, ref: { id?: string; namespace?: string; name?: string }): boolean {
  const d = dispatcherOf(s)
  if (ref.id !== undefined && d?.ref.id === ref.id) return true
  if (ref.name === undefined) return false
  const name = s.kind === 'durable' ? s.name : d?.ref.name
  return name === ref.name && (ref.namespace === undefined || ref.namespace === s.namespace)
}
