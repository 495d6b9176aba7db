import { expect } from 'chai'
import http from 'node:http'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { connect, type Socket } from 'node:net'
import { inTurn, OVERFLOW_REQUESTS } from '../../../../node/core/pipelining.js'
import { closeServer, listen } from '../../../../node/core/listen.js'
import { freePort } from '../../../../network/process.js'
import { waitUntil } from '../../../support/wait.js'

/**
 * A connection's pipelined requests, served in turn over real sockets: what reaches the handler, what is read of the
 * socket, and what others get meanwhile.
 */
describe('requests served in turn on each connection', () => {
  const QUEUED = 4
  let server: http.Server
  let port: number
  const sockets: Socket[] = []
  /** Requests handed to the server by Node (parsed), and those whose handler ran. */
  let parsed = 0
  let started = 0
  let maxAtOnce = 0
  let running = 0
  /** `started` when the last /status reached its handler. */
  let startedAtStatus = 0
  /** Called in a handler as it starts, while set. */
  let duringHandler: (() => void) | undefined
  /** While set, /hold answers wait for it. */
  let gate: Promise<void> | undefined
  let open: () => void = () => {}
  const answerBytes = 64 * 1024

  before(async () => {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      if (req.url === '/status') {
        startedAtStatus = started
        return void res.end('up')
      }
      started++
      duringHandler?.()
      running++
      maxAtOnce = Math.max(maxAtOnce, running)
      const answer = (): void => {
        running--
        res.end(req.url === '/big' ? 'b'.repeat(answerBytes) : `answer ${req.url}`)
      }
      if (req.url?.startsWith('/hold') && gate) void gate.then(answer)
      else if (req.url === '/sync') answer()
      else setImmediate(answer)
    }
    // These floods are far past what a connection may have waiting before it is closed: the bound is tested below.
    const turns = inTurn(handler, QUEUED, { closeAfter: 1_000_000 })
    server = http.createServer((req, res) => {
      if (req.url !== '/status') parsed++
      turns(req, res)
    })
    port = await freePort()
    await listen(server, port, '127.0.0.1')
  })
  afterEach(async () => {
    duringHandler = undefined
    for (const s of sockets.splice(0)) s.destroy()
    open()
    gate = undefined
    // Requests of a test's connections must not run into the next test's counts.
    const connections = (): Promise<number> => new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))
    await waitUntil('the server has seen every connection of the test close', async () => (await connections()) === 0 && running === 0, { intervalMs: 10 })
    parsed = started = maxAtOnce = running = 0
  })
  after(() => closeServer(server))

  async function opened(): Promise<Socket> {
    const s = connect(port, '127.0.0.1')
    sockets.push(s)
    await new Promise((r) => s.once('connect', r))
    return s
  }

  function hold(): void {
    gate = new Promise<void>((r) => (open = r))
  }

  function status(): Promise<string> {
    return new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/status', agent: false }, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => resolve(text))
      }).on('error', reject)
    })
  }

  /** Resolves once `s` has received `text`. */
  function readUntil(s: Socket, text: string): Promise<void> {
    return new Promise((resolve) => {
      let got = ''
      const onData = (c: Buffer): void => {
        got += c.toString()
        if (!got.includes(text)) return
        s.off('data', onData)
        resolve()
      }
      s.on('data', onData)
    })
  }

  const pipelined = (paths: string[]): string => paths.map((p) => `GET ${p} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`).join('')

  it('runs one handler of a flooded connection at a time, stops reading it, and answers another connection meanwhile', async () => {
    hold()
    const flood = await opened()
    const total = 5000
    const paths = Array.from({ length: total }, (_, i) => `/hold/${i}`)
    let received = ''
    flood.on('data', (c: Buffer) => (received += c.toString()))
    flood.write(pipelined(paths))
    await waitUntil('the first request reaches its handler', () => started === 1, { intervalMs: 10 })
    expect(await status(), 'another connection is answered while the flood waits').to.equal('up')
    const parsedWhileHeld = parsed
    expect(started, 'only the first of the flood is being served').to.equal(1)
    expect(parsedWhileHeld, 'the flooded socket is not read to its end while its first request is served').to.be.below(total / 2)

    open()
    await waitUntil('every pipelined request answered', () => (received.match(/HTTP\/1\.1 200/g) ?? []).length === total, { intervalMs: 10 })
    const order = [...received.matchAll(/answer \/hold\/(\d+)/g)].map((m) => Number(m[1]))
    expect(order).to.deep.equal(paths.map((_, i) => i))
    expect(maxAtOnce, 'handlers of one connection never overlap').to.equal(1)
  })

  it('lets other connections be read between the requests of one whose handlers answer at once', async () => {
    const flood = await opened()
    const total = 5000
    let answers = 0
    flood.on('data', (c: Buffer) => (answers += (c.toString().match(/HTTP\/1\.1 200/g) ?? []).length))
    flood.write(pipelined(Array.from({ length: total }, () => '/sync')))
    await waitUntil('the flood is being served', () => started > 0, { intervalMs: 1 })
    expect(await status()).to.equal('up')
    expect(started, 'requests of the flood served before the other connection was answered').to.be.below(total)
    await waitUntil('every answer of the flood', () => answers === total, { intervalMs: 10 })
  })

  it('starts one waiting request per turn of the event loop, whatever the number of connections pipelining', async () => {
    const asker = await opened()
    const floods = await Promise.all([1, 2, 3, 4].map(() => opened()))
    const total = 2000
    let answers = 0
    for (const f of floods) {
      f.on('data', (c: Buffer) => (answers += (c.toString().match(/HTTP\/1\.1 200/g) ?? []).length))
      f.write(pipelined(Array.from({ length: total }, () => '/sync')))
    }
    const answered = readUntil(asker, 'up')
    let before = 0
    // Sent from within a handler of the floods, so that it arrives while the loop is starting their waiting requests.
    duringHandler = () => {
      if (started < 100) return
      duringHandler = undefined
      before = started
      asker.write(pipelined(['/status']))
    }
    await answered
    // It is read in the loop's next poll: no other waiting request may start before, however many connections wait.
    expect(startedAtStatus - before, 'pipelined requests started while the other connection waited').to.be.at.most(1)
    await waitUntil('every answer of the floods', () => answers === 4 * total, { intervalMs: 10 })
  })

  it('builds no answer ahead of a client that does not read', async () => {
    const slow = await opened()
    slow.pause()
    const total = 2000
    slow.write(pipelined(Array.from({ length: total }, () => '/big')))
    // The kernel's socket buffers take some answers; then the next one cannot be handed over and nothing more starts.
    let last = -1
    await waitUntil('the server stops starting handlers', () => {
      const now = started
      const steady = now === last
      last = now
      return steady && now > 0
    }, { intervalMs: 200 })
    expect(started, 'handlers started for a client that reads nothing').to.be.below(total / 4)
    expect(await status()).to.equal('up')

    let bytes = 0
    slow.on('data', (c: Buffer) => (bytes += c.length))
    slow.resume()
    await waitUntil('every answer once the client reads', () => started === total && bytes >= total * answerBytes, { intervalMs: 10 })
    expect(maxAtOnce).to.equal(1)
  })

  it('drops what waits on a connection whose client is gone', async () => {
    hold()
    const s = await opened()
    s.write(pipelined(Array.from({ length: 50 }, (_, i) => `/hold/${i}`)))
    await waitUntil('the requests are parsed and the first is served', () => started === 1 && parsed === 50, { intervalMs: 10 })
    s.destroy()
    await new Promise((r) => setTimeout(r, 50))
    open()
    await new Promise((r) => setTimeout(r, 50))
    // The socket is not being read, so the server learns the client is gone only when an answer's write fails: the
    // first answer goes to the kernel, the next fails, and nothing after it runs.
    await waitUntil('the connection is seen closed', () => running === 0, { intervalMs: 10 })
    await new Promise((r) => setTimeout(r, 50))
    expect(started, 'handlers run for a client that has gone').to.be.at.most(2)
  })
})

/**
 * A connection whose first request is held, flooded with a read's worth of minimal requests behind it: what the
 * connection holds once it is past the bound.
 */
describe('a connection with more requests waiting than one read may bring', () => {
  let server: http.Server
  let socket: Socket
  let release: () => void = () => {}
  let started = 0
  const overflows: number[] = []
  /** Every answer object but the first (the held one), weakly. */
  const parsedBehind: WeakRef<http.ServerResponse>[] = []

  beforeEach(async () => {
    started = 0
    overflows.length = 0
    parsedBehind.length = 0
    const held = new Promise<void>((r) => (release = r))
    const turns = inTurn(
      (_req, res) => {
        started++
        void held.then(() => res.end('late'))
      },
      4,
      { onOverflow: (_socket, waiting) => overflows.push(waiting) },
    )
    let first = true
    server = http.createServer((req, res) => {
      if (first) first = false
      else parsedBehind.push(new WeakRef(res))
      turns(req, res)
    })
    const port = await freePort()
    await listen(server, port, '127.0.0.1')
    socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    await new Promise((r) => socket.once('connect', r))
    const closed = new Promise((r) => socket.once('close', r))
    socket.write(`GET /x HTTP/1.1\r\nHost: a\r\n\r\n`.repeat(2000))
    await waitUntil('the flooded connection is closed', () => socket.destroyed || socket.readableEnded, { intervalMs: 10, timeoutMs: 3000 })
    await closed
  })
  afterEach(async () => {
    socket.destroy()
    release()
    await closeServer(server)
  })

  it('is closed at once, its waiting requests dropped, and the overflow reported', () => {
    expect(overflows, 'one overflow, when the bound was reached').to.deep.equal([4 + OVERFLOW_REQUESTS])
    expect(started, 'only the first request reached its handler').to.equal(1)
  })

  it('holds none of the requests parsed behind the first while that one is still being served', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    await new Promise((r) => setTimeout(r, 50))
    gc()
    await new Promise((r) => setImmediate(r))
    gc()
    expect(parsedBehind.length, 'requests parsed behind the first').to.be.above(1000)
    expect(parsedBehind.filter((r) => r.deref() !== undefined).length, 'still held').to.equal(0)
  })
})
