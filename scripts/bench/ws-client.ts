/**
 * The events scenarios' WebSocket client: one connection that parses every frame as it arrives, checks it against
 * the sequences expected (no duplicates, none missing, in order), acknowledges it at once when asked, and times the
 * first and the last frame. The same code reads a member's event socket and the bare server, so the two rates differ
 * only by the server.
 */
import type { Socket } from 'node:net'
import WebSocket from 'ws'

export interface DrainOptions {
  url: string
  /** Sent once the socket is open (a member's `start`); none for the bare server, which starts on connection. */
  start?: object
  /** The sequences to receive, ascending; the drain ends once every one has arrived. */
  expected: readonly number[]
  /** `{"type":"ack","id":...}` for every frame, as it is parsed. */
  ack: boolean
  /** Keep each frame's text (to replay from the bare server). */
  capture: boolean
  timeoutMs: number
  signal: AbortSignal
}

export interface DrainResult {
  /** Event frames received (expected or not). */
  frames: number
  /** Frames whose sequence was expected and seen for the first time. */
  received: number
  /** Frames whose sequence had arrived before. */
  duplicates: number
  /** Frames whose sequence was not above the previous frame's. */
  outOfOrder: number
  /** Frames with a sequence outside the expected list (events newer than the backlog, or not in it). */
  unexpected: number
  /** Expected sequences that never arrived. */
  missing: number
  /** From the open socket to the first frame, ms. */
  firstFrameMs: number
  /** From the first frame to the last, s. */
  seconds: number
  /** Frames per second from the first frame to the last. */
  perSec: number
  /** Text bytes of every frame. */
  bytes: number
  /** Acknowledgements sent (one per frame when `ack`). */
  acks: number
  /** Set when the drain ended without every expected frame: timeout, close, protocol_error. */
  problem: string | undefined
  captured: string[]
}

interface EventFrame {
  type?: unknown
  id?: unknown
  sequence?: unknown
  error?: unknown
}

/** Opens a socket, reads every expected event, closes it. Never throws for what the server does: `problem` says. */
export function drainEvents(o: DrainOptions): Promise<DrainResult> {
  const maxSeq = o.expected.length > 0 ? o.expected[o.expected.length - 1]! : 0
  // By sequence: 1 expected and not yet seen, 2 seen.
  const wanted = new Uint8Array(maxSeq + 1)
  for (const s of o.expected) wanted[s] = 1
  const r: DrainResult = {
    frames: 0,
    received: 0,
    duplicates: 0,
    outOfOrder: 0,
    unexpected: 0,
    missing: 0,
    firstFrameMs: NaN,
    seconds: NaN,
    perSec: NaN,
    bytes: 0,
    acks: 0,
    problem: undefined,
    captured: [],
  }
  const seenUnexpected = new Set<number>()
  let lastSeq = -Infinity
  let openedAt = NaN
  let first = NaN
  let last = NaN

  return new Promise<DrainResult>((resolve) => {
    const ws = new WebSocket(o.url, { perMessageDeflate: false })
    let done = false
    const finish = (problem?: string): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      o.signal.removeEventListener('abort', onAbort)
      r.problem = problem
      r.missing = o.expected.length - r.received
      r.firstFrameMs = first - openedAt
      r.seconds = (last - first) / 1000
      r.perSec = r.frames / Math.max(1e-3, r.seconds)
      ws.removeAllListeners('message')
      ws.on('error', () => {})
      ws.close()
      resolve(r)
    }
    const onAbort = (): void => finish('interrupted')
    const timer = setTimeout(() => finish(`timed out after ${o.timeoutMs} ms with ${r.received} of ${o.expected.length} events`), o.timeoutMs)
    o.signal.addEventListener('abort', onAbort, { once: true })

    ws.once('open', () => {
      openedAt = performance.now()
      if (o.start) ws.send(JSON.stringify(o.start))
      if (o.expected.length === 0) finish()
    })
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const now = performance.now()
      const text = isBinary ? '' : data.toString()
      let f: EventFrame
      try {
        f = JSON.parse(text) as EventFrame
      } catch {
        return finish(`a frame that is not JSON: ${text.slice(0, 200)}`)
      }
      if (f.type === 'protocol_error') return finish(`protocol_error: ${String(f.error)}`)
      const seq = f.sequence
      if (typeof seq !== 'number' || typeof f.id !== 'string') return finish(`a frame without a sequence and id: ${text.slice(0, 200)}`)
      if (r.frames === 0) first = now
      last = now
      r.frames++
      r.bytes += text.length
      if (o.capture) r.captured.push(text)
      if (o.ack) {
        ws.send(`{"type":"ack","id":${JSON.stringify(f.id)}}`)
        r.acks++
      }
      if (seq <= lastSeq) r.outOfOrder++
      lastSeq = Math.max(lastSeq, seq)
      const w = seq <= maxSeq ? wanted[seq] : 0
      if (w === 1) {
        wanted[seq] = 2
        if (++r.received === o.expected.length) finish()
      } else if (w === 2) r.duplicates++
      else if (seenUnexpected.has(seq)) r.duplicates++
      else {
        seenUnexpected.add(seq)
        r.unexpected++
      }
    })
    ws.once('close', (code, reason) => finish(`the server closed the socket (${code}${reason.length > 0 ? ` ${reason.toString()}` : ''}) after ${r.received} of ${o.expected.length} events`))
    ws.once('error', (err) => finish(`socket error: ${err.message}`))
  })
}

/** A socket that opens, starts, and then stops reading: the kernel's buffers fill and the server must hold back. */
export interface StalledClient {
  ws: WebSocket
  /** The client's local port, to find both ends of the connection in /proc/net/tcp. */
  localPort: number
  /** Frames that reached this process before it stopped reading, or after `resume()`, and their text bytes. */
  frames: number
  bytes: number
  closed: boolean
  resume(): void
  close(): void
}

/** Opens `url`, sends `start`, and pauses the socket at once: nothing more is read from the kernel. */
export function openStalled(url: string, start: object | undefined, timeoutMs = 10_000): Promise<StalledClient> {
  return new Promise<StalledClient>((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false })
    const timer = setTimeout(() => {
      ws.terminate()
      reject(new Error(`${url} did not open within ${timeoutMs} ms`))
    }, timeoutMs)
    const c: StalledClient = {
      ws,
      localPort: 0,
      frames: 0,
      bytes: 0,
      closed: false,
      resume: () => ws.resume(),
      close: () => ws.terminate(),
    }
    ws.on('message', (data: Buffer) => {
      c.frames++
      c.bytes += data.length
    })
    ws.on('close', () => (c.closed = true))
    ws.once('error', (err) => {
      clearTimeout(timer)
      c.closed = true
      reject(err)
    })
    ws.once('open', () => {
      clearTimeout(timer)
      c.localPort = (ws as unknown as { _socket: Socket })._socket.localPort ?? 0
      if (start) ws.send(JSON.stringify(start))
      // ws.pause() pauses the underlying socket: the kernel's receive buffer fills, then the server's send buffer.
      ws.pause()
      ws.on('error', () => {})
      resolve(c)
    })
  })
}
