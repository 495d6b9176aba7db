import { expect } from 'chai'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { streamGet, type HttpStatusError } from '../../node/storage/ipfs-http.js'

/** A keep-alive agent that records the ports of the connections it makes. */
class RecordingAgent extends http.Agent {
  readonly ports: number[] = []
  constructor() {
    super({ keepAlive: true })
  }
  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    this.ports.push(Number(options.port))
    return super.createConnection(options, callback)
  }
}

/** The gateway side of the IPFS seam against a real node:http server: redirects, stalls, statuses. */
describe('storage: GETs from an IPFS gateway over node:http', function () {
  let server: http.Server
  let base: string
  const agent = new http.Agent({ keepAlive: true })
  let handler: http.RequestListener = (_req, res) => res.end()

  before(async function () {
    server = http.createServer((req, res) => handler(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(async function () {
    agent.destroy()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  async function read(url: string, idleMs?: number): Promise<string> {
    const chunks: Buffer[] = []
    for await (const c of streamGet(url, { agent, ...(idleMs !== undefined ? { idleMs } : {}) })) chunks.push(Buffer.from(c))
    return Buffer.concat(chunks).toString('utf8')
  }
  const failure = (p: Promise<unknown>): Promise<Error> =>
    p.then(
      () => {
        throw new Error('expected a rejection')
      },
      (e: unknown) => e as Error,
    )

  it('follows a gateway’s redirects, relative and absolute, and gives up after five', async function () {
    handler = (req, res) => {
      const n = Number(new URL(req.url!, base).searchParams.get('hops') ?? 0)
      if (req.url === '/ipfs/abc') res.writeHead(301, { location: '/moved/abc' }).end()
      else if (req.url === '/moved/abc') res.writeHead(307, { location: `${base}/final/abc` }).end()
      else if (req.url === '/final/abc') res.end('the content')
      else res.writeHead(302, { location: `/loop?hops=${n + 1}` }).end()
    }
    expect(await read(`${base}/ipfs/abc`)).to.equal('the content')
    expect((await failure(read(`${base}/loop`))).message).to.match(/^more than 5 redirects/)
  })

  it('follows a redirect to another origin without this origin\'s connection pool, and takes a 304 or one without a location as a status', async function () {
    const other = http.createServer((_req, res) => res.end('elsewhere'))
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    const otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
    try {
      const counting = new RecordingAgent()
      handler = (_req, res) => res.writeHead(302, { location: `${otherBase}/ipfs/abc` }).end()
      const chunks: Buffer[] = []
      for await (const c of streamGet(`${base}/ipfs/abc`, { agent: counting })) chunks.push(Buffer.from(c))
      expect(Buffer.concat(chunks).toString()).to.equal('elsewhere')
      expect(counting.ports, 'ports connected to through the pool').to.deep.equal([Number(new URL(base).port)])
      counting.destroy()
    } finally {
      other.closeAllConnections()
      await new Promise((resolve) => other.close(resolve))
    }
    handler = (_req, res) => res.writeHead(304, { location: '/ipfs/elsewhere' }).end()
    expect(((await failure(read(`${base}/ipfs/abc`))) as HttpStatusError).status).to.equal(304)
    handler = (_req, res) => res.writeHead(301).end()
    expect(((await failure(read(`${base}/ipfs/abc`))) as HttpStatusError).status, 'a redirect to nowhere').to.equal(301)
  })

  it('rejects with the signal\'s reason when it aborts before the answer, or before the call', async function () {
    handler = () => {} // never answers
    const abort = new AbortController()
    const reason = new Error('no longer wanted')
    const pending = failure((async () => {
      for await (const _c of streamGet(`${base}/ipfs/slow`, { agent, signal: abort.signal }));
    })())
    setTimeout(() => abort.abort(reason), 20)
    expect(await pending).to.equal(reason)
    expect(await failure((async () => {
      for await (const _c of streamGet(`${base}/ipfs/slow`, { agent, signal: abort.signal }));
    })())).to.equal(reason)
  })

  it('rejects a status outside 2xx with the status, reading nothing of the body', async function () {
    handler = (_req, res) => res.writeHead(404).end('no link named')
    const err = (await failure(read(`${base}/ipfs/absent`))) as HttpStatusError
    expect(err.status).to.equal(404)
  })

  it('fails a transfer that stops moving, before the head and in the middle of the body', async function () {
    handler = (req, res) => {
      if (req.url === '/silent') return // never answers
      res.writeHead(200, { 'content-length': '10' })
      res.write('abc') // and stalls
    }
    expect((await failure(read(`${base}/silent`, 200))).message).to.equal('the gateway sent nothing for 0.2 s')
    expect((await failure(read(`${base}/stalled`, 200))).message).to.equal('the gateway sent nothing for 0.2 s')
    // The connection pool still serves a healthy answer afterwards.
    handler = (_req, res) => res.end('fine')
    expect(await read(`${base}/ipfs/ok`)).to.equal('fine')
  })

  it('sends a request again when the gateway dropped the idle keep-alive connection as it went out', async function () {
    let requests = 0
    handler = (_req, res) => {
      requests++
      res.end('again')
    }
    expect(await read(`${base}/ipfs/first`)).to.equal('again')
    server.closeIdleConnections()
    expect(await read(`${base}/ipfs/second`)).to.equal('again')
    expect(requests).to.equal(2)
  })
})
