/**
 * The events scenario's bare comparison server: what this machine and this client can take over one WebSocket at
 * all, with none of a member's work (reading the log, enriching, rendering, offsets). It replays frames captured
 * from a member's durable subscription, byte for byte, to each connection, through the same stack and the same
 * back-pressure as a member's event socket: `ws` without compression on a plain `node:http` server's upgrade, and
 * no more frames while 1 MiB sent is not yet handed to the kernel (a member's `SEND_HIGH_WATER`).
 *
 * `node --import tsx scripts/bench/bare-ws-server.ts FRAMES.json`: FRAMES.json holds a JSON array of frame texts.
 * Listens on a free port of 127.0.0.1 and prints `{"port":N}` once it accepts connections. Per connection, by query:
 * `mode=push` sends every frame as fast as back-pressure allows (an autoack listener); `mode=ack&window=W` keeps
 * at most W frames unacknowledged, each acknowledged by `{"type":"ack","id":...}` (a durable subscription with
 * readAhead W-1); `from=K` starts at frame K (a warm-up replays the tail). Imports nothing from the project, so the
 * baseline does not move when the node's code does.
 */
import http from 'node:http'
import { readFileSync } from 'node:fs'
import { WebSocketServer, type WebSocket } from 'ws'

/** A member's `SEND_HIGH_WATER` (node/events/websockets/connection.ts). */
const SEND_HIGH_WATER = 1 << 20
/** A member's limit on client frames: acks are a few dozen bytes. */
const MAX_CLIENT_FRAME = 64 * 1024

const file = process.argv[2]
if (!file) {
  process.stderr.write('usage: bare-ws-server.ts FRAMES.json\n')
  process.exit(2)
}
const frames = JSON.parse(readFileSync(file, 'utf8')) as string[]
// The ids acks name, read once here: a member renders them with the frame, which is its work, not the baseline's.
const ids = frames.map((f) => String((JSON.parse(f) as { id?: unknown }).id))

function serve(ws: WebSocket, params: URLSearchParams): void {
  const ack = params.get('mode') === 'ack'
  const window = ack ? Math.max(1, Number(params.get('window') ?? 51)) : Number.POSITIVE_INFINITY
  let next = Math.min(frames.length, Math.max(0, Number(params.get('from') ?? 0)))
  let pending = 0
  let closed = false
  const inFlight = new Set<string>()

  const pump = (): void => {
    while (!closed && next < frames.length && pending < SEND_HIGH_WATER && inFlight.size < window) {
      const frame = frames[next]!
      if (ack) inFlight.add(ids[next]!)
      next++
      const bytes = frame.length
      pending += bytes
      ws.send(frame, () => {
        const wasFull = pending >= SEND_HIGH_WATER
        pending -= bytes
        if (wasFull && pending < SEND_HIGH_WATER) pump()
      })
    }
  }

  ws.on('message', (data, isBinary) => {
    if (isBinary) return ws.close(1008, 'binary frame')
    let id: unknown
    try {
      const f = JSON.parse(data.toString()) as { type?: unknown; id?: unknown }
      id = f.type === 'ack' ? f.id : undefined
    } catch {
      id = undefined
    }
    if (typeof id !== 'string' || !inFlight.delete(id)) return ws.close(1008, 'not an ack of a frame in flight')
    pump()
  })
  ws.on('close', () => (closed = true))
  ws.on('error', () => (closed = true))
  pump()
}

const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME, perMessageDeflate: false, clientTracking: false })
const server = http.createServer((_req, res) => {
  res.statusCode = 404
  res.end()
})
server.on('upgrade', (req, socket, head) => {
  const url = new URL(req.url ?? '/', 'http://localhost')
  wss.handleUpgrade(req, socket, head, (ws) => serve(ws, url.searchParams))
})
server.keepAliveTimeout = 5_000
server.listen(0, '127.0.0.1', () => {
  const addr = server.address()
  process.stdout.write(`${JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0, frames: frames.length })}\n`)
})

// Detached like a member node, so a benchmark killed outright leaves it behind; the reaper stops it by PID, and
// this covers a reaper that went too.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) process.exit(0)
}, 1000).unref()
