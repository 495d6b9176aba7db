import { expect } from 'chai'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { JsonRpcClient, RpcError } from '../../../../node/chain/rpc.js'

/** What the endpoint saw of one request: its JSON-RPC body and the connection it came on. */
interface Seen {
  body: { id: number; method: string; params: unknown[] }
  socket: Socket
}

type Answer = (seen: Seen, req: IncomingMessage, res: ServerResponse) => void

/** A JSON-RPC endpoint on loopback that answers each request as the test says, recording them. */
class Endpoint {
  readonly seen: Seen[] = []
  private readonly sockets = new Set<Socket>()
  private server: Server | undefined
  answer: Answer = (_s, _q, res) => res.end('{}')

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const seen = { body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Seen['body'], socket: req.socket }
        this.seen.push(seen)
        this.answer(seen, req, res)
      })
    })
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s)
      s.on('close', () => this.sockets.delete(s))
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()))
  }
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(typeof body === 'string' ? body : JSON.stringify(body))
}

async function failure(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p
  } catch (err) {
    expect(err).to.be.instanceOf(RpcError)
    return err as RpcError
  }
  throw new Error('expected the call to fail')
}

/** A loopback port nothing listens on: one just freed. */
async function closedPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const { port } = s.address() as AddressInfo
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

describe('JSON-RPC client', () => {
  let endpoint: Endpoint
  let url: string
  let client: JsonRpcClient | undefined
  beforeEach(async () => {
    endpoint = new Endpoint()
    url = await endpoint.start()
  })
  afterEach(async () => {
    client?.close()
    client = undefined
    await endpoint.stop()
  })

  it('posts numbered JSON-RPC 2.0 requests and answers their results, null included', async () => {
    endpoint.answer = (s, _q, res) => json(res, 200, { jsonrpc: '2.0', id: s.body.id, result: s.body.method === 'eth_blockNumber' ? '0x10' : null })
    client = new JsonRpcClient(url)
    expect(await client.call('eth_blockNumber')).to.equal('0x10')
    expect(await client.call('eth_getTransactionReceipt', ['0xab'])).to.equal(null)
    expect(endpoint.seen.map((s) => s.body)).to.deep.equal([
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_getTransactionReceipt', params: ['0xab'] },
    ])
    // Kept alive: both on one connection.
    expect(endpoint.seen[0]!.socket).to.equal(endpoint.seen[1]!.socket)
  })

  it("passes the endpoint's error on as not a transport failure, with its code and data", async () => {
    endpoint.answer = (s, _q, res) =>
      s.body.method === 'eth_sendRawTransaction'
        ? json(res, 200, { jsonrpc: '2.0', id: s.body.id, error: { code: -32000, message: 'nonce too low', data: { nonce: 3 } } })
        : json(res, 200, { jsonrpc: '2.0', id: s.body.id, error: { code: -32601 } })
    client = new JsonRpcClient(url)
    const err = await failure(client.call('eth_sendRawTransaction', ['0x00']))
    expect(err).to.include({ message: 'nonce too low', transport: false, code: -32000 })
    expect(err.data).to.deep.equal({ nonce: 3 })
    // Without a message, the method names what failed.
    expect(await failure(client.call('eth_nope'))).to.include({ message: 'eth_nope failed', transport: false, code: -32601 })
  })

  it('calls an answer that is not JSON-RPC a transport failure, naming the status', async () => {
    const answers: Record<string, [number, string]> = {
      html: [502, '<html>Bad Gateway</html>'],
      empty: [200, ''],
      nul: [200, 'null'],
      number: [200, '42'],
      noResult: [200, '{"jsonrpc":"2.0","id":1}'],
    }
    endpoint.answer = (s, _q, res) => json(res, ...answers[s.body.method]!)
    client = new JsonRpcClient(url)
    const html = await failure(client.call('html'))
    expect(html.transport).to.equal(true)
    expect(html.message).to.match(new RegExp(`^${url} answered HTTP 502 without JSON-RPC: .+`))
    expect((await failure(client.call('empty'))).message).to.match(new RegExp(`^${url} answered HTTP 200 without JSON-RPC: .+`))
    expect(await failure(client.call('nul'))).to.include({ message: `${url} answered HTTP 200 without JSON-RPC`, transport: true })
    expect(await failure(client.call('number'))).to.include({ message: `${url} answered HTTP 200 without JSON-RPC`, transport: true })
    expect(await failure(client.call('noResult'))).to.include({ message: `${url} answered HTTP 200 without a result`, transport: true })
  })

  it('names why the endpoint cannot be reached: refused, or no answer in time', async () => {
    const refused = `http://127.0.0.1:${await closedPort()}`
    client = new JsonRpcClient(refused)
    expect(await failure(client.call('eth_chainId'))).to.include({ message: `cannot reach ${refused}: ECONNREFUSED`, transport: true })
    client.close()

    const secure = `https://127.0.0.1:${await closedPort()}`
    client = new JsonRpcClient(secure)
    expect(await failure(client.call('eth_chainId'))).to.include({ message: `cannot reach ${secure}: ECONNREFUSED`, transport: true })
    client.close()

    endpoint.answer = () => {} // never answers
    client = new JsonRpcClient(url, 50)
    expect(await failure(client.call('eth_chainId'))).to.include({ message: `cannot reach ${url}: timed out`, transport: true })
    expect(endpoint.seen).to.have.length(1)
  })

  it('fails a call whose answer stops midway, without asking again on a fresh connection', async () => {
    endpoint.answer = (_s, _q, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
      res.write('{"jsonrpc":"2.0","id":1,')
      setImmediate(() => res.socket?.destroy())
    }
    client = new JsonRpcClient(url)
    expect(await failure(client.call('eth_chainId'))).to.include({ message: `cannot reach ${url}: ECONNRESET`, transport: true })
    expect(endpoint.seen).to.have.length(1)
  })

  it('asks once more on a fresh connection when a kept-alive one is reset before any answer, and only once', async () => {
    // The first request is answered; every later one on a connection that already served one is dropped unanswered.
    const served = new Set<Socket>()
    endpoint.answer = (s, _q, res) => {
      if (served.has(s.socket)) return void s.socket.destroy()
      served.add(s.socket)
      json(res, 200, { jsonrpc: '2.0', id: s.body.id, result: s.body.id })
    }
    client = new JsonRpcClient(url)
    expect(await client.call('first')).to.equal(1)
    // Reset on the reused connection, answered on a new one: the same request (same id) twice.
    expect(await client.call('second')).to.equal(2)
    expect(endpoint.seen.map((s) => s.body.id)).to.deep.equal([1, 2, 2])
    expect(endpoint.seen[2]!.socket).to.not.equal(endpoint.seen[1]!.socket)

    // A retry that is reset as well is a failure: not a third try.
    endpoint.answer = (s) => void s.socket.destroy()
    expect(await failure(client.call('third'))).to.include({ message: `cannot reach ${url}: ECONNRESET`, transport: true })
    expect(endpoint.seen.map((s) => s.body.id)).to.deep.equal([1, 2, 2, 3, 3])
  })
})
