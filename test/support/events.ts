import { expect } from 'chai'
import WebSocket from 'ws'
import type { MemberDescription } from '../../network/description.js'
import { get, nsBase, request, type ApiEvent, type ApiMessage, type Reply } from './api.js'

/** `{id, namespace, name}` as every delivered event and batch names its subscription. */
export interface SubRef {
  id: string
  namespace: string
  name: string
}

/** An event as the event socket delivers it (docs/api.md, Events over WebSockets): the log's fields, the referred object, the subscription. */
export interface DeliveredEvent extends ApiEvent {
  subscription: SubRef
  transaction?: { id: string; type: string; namespace?: string; blockchainIds?: string[] }
  blockchainEvent?: { id: string; name?: string; namespace?: string; listener?: string; protocolId?: string; output?: unknown }
  datatype?: unknown
  identity?: unknown
}

/** Any frame the server sends: an event, an `event_batch`, or a `protocol_error`. */
export type Frame = Partial<DeliveredEvent> & { type?: string; error?: string; events?: DeliveredEvent[]; [k: string]: unknown }

/** A subscription as the REST API answers it. */
export interface ApiSubscription {
  id: string
  namespace: string
  name: string
  transport: string
  filter: Record<string, unknown>
  options: { firstEvent?: string; readAhead?: number; batch?: boolean; batchTimeout?: string; withData?: boolean }
  created: string
  updated?: string
  status?: { currentOffset: number }
}

const open = new Set<EventSocket>()

/**
 * One application's event socket, as a test drives it: every frame received is kept (`frames`), events (those of
 * `event_batch` frames too) in `events`, in arrival order. With `ack` set, each event (or batch) is acknowledged as
 * it arrives, the way FireFly's SDK does: `{type: "ack", id, subscription}`. Every socket opened here is closed by
 * `closeEventSockets()`, which the suites run after each test, whatever happened.
 */
export class EventSocket {
  readonly frames: Frame[] = []
  readonly events: DeliveredEvent[] = []
  /** Ids of everything this socket acknowledged, in order. */
  readonly acked: string[] = []
  /** Resolves with the close code once the socket is closed (by either side). */
  readonly closed: Promise<{ code: number; reason: string }>
  closeCode: number | undefined
  private waiters: (() => void)[] = []

  private constructor(
    readonly ws: WebSocket,
    readonly url: string,
    public ack: boolean,
  ) {
    open.add(this)
    ws.on('message', (data) => {
      const text = data.toString()
      let frame: Frame
      try {
        frame = JSON.parse(text) as Frame
      } catch {
        frame = { type: 'unparseable', error: text }
      }
      this.frames.push(frame)
      if (frame.type === 'event_batch') {
        this.events.push(...(frame.events ?? []))
        if (this.ack) this.sendAck(frame.id as string, frame.subscription as SubRef)
      } else if (frame.type !== 'protocol_error' && typeof frame.id === 'string' && typeof frame.sequence === 'number') {
        this.events.push(frame as DeliveredEvent)
        if (this.ack) this.sendAck(frame.id, frame.subscription as SubRef)
      }
      this.wakeAll()
    })
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        this.closeCode = code
        open.delete(this)
        this.wakeAll()
        resolve({ code, reason: reason.toString() })
      }),
    )
    ws.on('error', () => {})
  }

  /**
   * Opens `url` and resolves once it is open; rejects with the status and body of a refused upgrade. With `origin`
   * it sends that `Origin`, as a browser page would (programs send none).
   */
  static open(url: string, opts: { ack?: boolean; origin?: string } = {}): Promise<EventSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, opts.origin !== undefined ? { origin: opts.origin } : {})
      const s = new EventSocket(ws, url, opts.ack ?? false)
      ws.once('open', () => resolve(s))
      ws.once('error', (err) => reject(err))
      ws.once('unexpected-response', (_req, res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () => {
          open.delete(s)
          reject(Object.assign(new Error(`upgrade of ${url} refused: ${res.statusCode} ${body}`), { status: res.statusCode, body }))
        })
      })
    })
  }

  send(v: unknown): void {
    this.ws.send(typeof v === 'string' ? v : JSON.stringify(v))
  }

  /** Acknowledges an event (or a batch) by id, naming the subscription when given, as FireFly's SDK does. */
  sendAck(id: string, subscription?: SubRef): void {
    this.acked.push(id)
    this.send({ type: 'ack', id, ...(subscription ? { subscription } : {}) })
  }

  /** Waits until `check` holds on this socket; the timeout names `what` and what the socket had. */
  async until(what: string, check: (s: EventSocket) => boolean, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!check(this)) {
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} on ${this.url}; had ${this.events.length} events, ${this.frames.length} frames, last: ${JSON.stringify(this.frames.slice(-2)).slice(0, 600)}`)
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 200)
      })
    }
  }

  /** Waits for at least `n` events in all. */
  untilEvents(n: number, timeoutMs = 60_000): Promise<void> {
    return this.until(`${n} events`, (s) => s.events.length >= n, timeoutMs)
  }

  /** Waits for an event referring to `reference` (and of `type`, when given); answers it. */
  async eventFor(reference: string, type = 'message_confirmed', timeoutMs = 60_000): Promise<DeliveredEvent> {
    await this.until(`a ${type} event for ${reference}`, (s) => s.events.some((e) => e.reference === reference && e.type === type), timeoutMs)
    return this.events.find((e) => e.reference === reference && e.type === type)!
  }

  /** Waits for the server to send a `protocol_error` and close the socket; answers the error and the close code. */
  async protocolError(timeoutMs = 15_000): Promise<{ error: string; code: number }> {
    await this.until('a protocol_error', (s) => s.frames.some((f) => f.type === 'protocol_error'), timeoutMs)
    const f = this.frames.find((x) => x.type === 'protocol_error')!
    const closed = await Promise.race([this.closed, new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs))])
    if (!closed) throw new Error(`the server sent ${JSON.stringify(f)} but did not close the socket`)
    return { error: f.error ?? '', code: closed.code }
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close()
  }

  /** Drops the connection without a closing handshake, as a crashed client would. */
  terminate(): void {
    this.ws.terminate()
  }

  private wakeAll(): void {
    for (const w of this.waiters.splice(0)) w()
  }
}

/** Closes every socket still open (run after each test) and waits until they are closed. */
export async function closeEventSockets(): Promise<void> {
  const all = [...open]
  for (const s of all) s.terminate()
  await Promise.all(all.map((s) => Promise.race([s.closed, new Promise((r) => setTimeout(r, 2000))])))
  open.clear()
}

/** `ws://host:port` of a member's API. */
export const wsBase = (m: MemberDescription): string => m.api.replace(/^http/, 'ws')

/** The event socket at the root (`/ws`) with a query. */
export const rootWs = (m: MemberDescription, query: string): string => `${wsBase(m)}/ws${query ? `?${query}` : ''}`

/** The namespaced event socket (`/api/v1/namespaces/{ns}/ws`) with a query. */
export const nsWs = (m: MemberDescription, ns: string, query: string): string => `${wsBase(m)}/api/v1/namespaces/${ns}/ws${query ? `?${query}` : ''}`

export const subsUrl = (m: MemberDescription, ns: string): string => `${nsBase(m, ns)}/subscriptions`

/** POSTs a subscription and insists on the 201. */
export async function createSubscription(m: MemberDescription, ns: string, body: unknown): Promise<ApiSubscription> {
  const r = await request<ApiSubscription>('POST', subsUrl(m, ns), body)
  if (r.status !== 201) throw new Error(`${m.org}: POST subscription ${JSON.stringify(body)} answered ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

/** A subscription with `?fetchstatus=true`. */
export function subscriptionStatus(m: MemberDescription, ns: string, idOrName: string): Promise<Reply<ApiSubscription>> {
  return get<ApiSubscription>(`${subsUrl(m, ns)}/${idOrName}?fetchstatus=true`)
}

/** The stored offset of a subscription (`status.currentOffset` with `?fetchstatus`). */
export async function currentOffset(m: MemberDescription, ns: string, idOrName: string): Promise<number> {
  const r = await subscriptionStatus(m, ns, idOrName)
  if (r.status !== 200) throw new Error(`${m.org}: GET subscription ${idOrName}?fetchstatus answered ${r.status} ${JSON.stringify(r.body)}`)
  const o = r.body.status?.currentOffset
  if (typeof o !== 'number') throw new Error(`${m.org}: subscription ${idOrName} has no status.currentOffset: ${JSON.stringify(r.body)}`)
  return o
}

/**
 * Waits until a subscription's stored offset is exactly `seq`; fails at once if it goes past it (an event settled
 * that should not have been).
 */
export async function waitOffset(m: MemberDescription, ns: string, idOrName: string, seq: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = await currentOffset(m, ns, idOrName)
  while (last !== seq) {
    if (last > seq) throw new Error(`${m.org}: the stored offset of ${ns}/${idOrName} went past ${seq}: ${last}`)
    if (Date.now() > deadline) throw new Error(`${m.org}: timed out after ${timeoutMs} ms waiting for the stored offset of ${ns}/${idOrName} to reach ${seq} (last read ${last})`)
    await sleep(100)
    last = await currentOffset(m, ns, idOrName)
  }
}

/** The events of a namespace on a member, oldest first (`sort=sequence`), optionally with their referred objects. */
export async function eventLog(m: MemberDescription, ns: string, query = ''): Promise<DeliveredEvent[]> {
  const r = await get<DeliveredEvent[]>(`${nsBase(m, ns)}/events?sort=sequence&limit=1000${query ? `&${query}` : ''}`)
  if (r.status !== 200) throw new Error(`${m.org}: GET ${ns} events answered ${r.status} ${JSON.stringify(r.body)}`)
  for (let i = 1; i < r.body.length; i++) {
    if (!(r.body[i]!.sequence > r.body[i - 1]!.sequence)) throw new Error(`${m.org}: ${ns} events not in ascending sequence at ${i}`)
  }
  return r.body
}

/** No element twice; the message names the first repeat. */
export function expectNoRepeats(ids: readonly string[], what: string): void {
  const seen = new Set<string>()
  for (const id of ids) {
    expect(seen.has(id), `${what}: ${id} twice`).to.equal(false)
    seen.add(id)
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
