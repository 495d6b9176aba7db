import { createHash } from 'node:crypto'
import { expect } from 'chai'
import { create, type KuboRPCClient } from 'kubo-rpc-client'
import { isAlive } from '../../network/process.js'
import {
  collect,
  kuboDeterministicBytes,
  removeIfPassed,
  sha256Of,
  startIpfsProcess,
  stopIpfsProcess,
  tempDir,
  type IpfsProcess,
} from '../support/ipfs.js'

const BIG_SIZE = 175 * 262_144 // two tree levels under Kubo's defaults
const BIG_CID = 'QmepeWtdmS1hHXx1oZXsPUv6bMrfRRKfZcoPPU4eEfjnbf'
const HELLO = 'QmVr26fY1tKyspEJBniVhqxQeEjhF78XerGiqWAwraVLQH' // "Hello Worlds!\n"
const ABSENT = 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQX' // well-formed, never added

interface KuboErrorBody {
  Message: string
  Code: number
  Type: string
}

describe('local IPFS: reading back and bad input', function () {
  this.timeout(60_000)
  const dir = tempDir('ipfs-read')
  let ipfs: IpfsProcess | undefined
  let client: KuboRPCClient
  let bigSha = ''
  let bigBytes: Buffer

  before(async () => {
    ipfs = await startIpfsProcess(dir)
    client = create({ url: ipfs.api })
    const h = createHash('sha256')
    expect((await client.add(kuboDeterministicBytes(BIG_SIZE, 'v0-seed', h))).cid.toString()).to.equal(BIG_CID)
    bigSha = h.digest('hex')
    bigBytes = await collect(kuboDeterministicBytes(BIG_SIZE, 'v0-seed')) // 44 MiB, for slicing in the range tests
    expect((await client.add(Buffer.from('Hello Worlds!\n'))).cid.toString()).to.equal(HELLO)
  })
  after(async function () {
    await stopIpfsProcess(ipfs)
    removeIfPassed(this, [dir])
  })

  const rpc = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${ipfs?.api}/api/v0/${path}`, { method: 'POST', ...init })
  const gw = (path: string, init: RequestInit = {}): Promise<Response> => fetch(`${ipfs?.gateway}${path}`, init)

  it('cat and the gateway give back the same bytes (sha256 while streaming)', async () => {
    expect(await sha256Of(client.cat(BIG_CID))).to.deep.equal({ sha256: bigSha, bytes: BIG_SIZE })
    expect(await sha256Of(client.cat(`/ipfs/${BIG_CID}`))).to.deep.equal({ sha256: bigSha, bytes: BIG_SIZE })
    const res = await gw(`/ipfs/${BIG_CID}`)
    expect(res.status).to.equal(200)
    expect(res.headers.get('content-length')).to.equal(String(BIG_SIZE))
    expect(res.headers.get('etag')).to.equal(`"${BIG_CID}"`)
    expect(res.headers.get('x-ipfs-path')).to.equal(`/ipfs/${BIG_CID}`)
    expect(await sha256Of(res.body as AsyncIterable<Uint8Array>)).to.deep.equal({ sha256: bigSha, bytes: BIG_SIZE })
  })

  it('cat honours offset and length, also across chunk and file boundaries (as in kubo t0040)', async () => {
    const text = async (args: string): Promise<string> => (await (await rpc(`cat?${args}`)).text())
    expect(await text(`arg=${HELLO}&offset=10`)).to.equal('ds!\n')
    expect(await text(`arg=${HELLO}&length=8`)).to.equal('Hello Wo')
    expect(await text(`arg=${HELLO}&length=0`)).to.equal('')
    expect(await text(`arg=${HELLO}&length=100`)).to.equal('Hello Worlds!\n')
    expect(await text(`arg=${HELLO}&offset=100`)).to.equal('')
    expect(await text(`arg=${HELLO}&arg=${HELLO}&arg=${HELLO}&offset=5&length=15`)).to.equal(' Worlds!\nHello ')
    for (const [offset, length] of [[262_140, 10], [0, 1], [BIG_SIZE - 3, 10], [174 * 262_144 - 5, 262_154]] as const) {
      const got = await collect(client.cat(BIG_CID, { offset, length }))
      expect(Buffer.compare(got, bigBytes.subarray(offset, offset + length)), `offset ${offset}`).to.equal(0)
    }
  })

  it('the gateway answers HEAD without a body, single ranges with 206, and If-None-Match with 304', async () => {
    const head = await gw(`/ipfs/${BIG_CID}`, { method: 'HEAD' })
    expect(head.status).to.equal(200)
    expect(head.headers.get('content-length')).to.equal(String(BIG_SIZE))
    expect(head.headers.get('etag')).to.equal(`"${BIG_CID}"`)
    expect((await head.arrayBuffer()).byteLength).to.equal(0)
    const part = await gw(`/ipfs/${BIG_CID}`, { headers: { Range: 'bytes=262140-262149' } })
    expect(part.status).to.equal(206)
    expect(part.headers.get('content-range')).to.equal(`bytes 262140-262149/${BIG_SIZE}`)
    expect(Buffer.compare(Buffer.from(await part.arrayBuffer()), bigBytes.subarray(262_140, 262_150))).to.equal(0)
    expect((await gw(`/ipfs/${BIG_CID}`, { headers: { 'If-None-Match': `"${BIG_CID}"` } })).status).to.equal(304)
  })

  it('gateway: 404 for an absent CID, 400 for a malformed one, 405 for writes', async () => {
    const absent = await gw(`/ipfs/${ABSENT}`)
    expect(absent.status).to.equal(404)
    expect(await absent.text()).to.contain(ABSENT)
    expect((await gw(`/ipfs/${ABSENT}`, { method: 'HEAD' })).status).to.equal(404)
    const malformed = await gw('/ipfs/not-a-cid')
    expect(malformed.status).to.equal(400)
    expect(await malformed.text()).to.match(/not a valid CID/)
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await gw(`/ipfs/${HELLO}`, { method, body: method === 'DELETE' ? undefined : 'x' })
      expect(res.status, method).to.equal(405)
    }
    expect((await gw('/ipns/whatever')).status).to.equal(404)
  })

  it('RPC errors use Kubo\'s shape; an absent CID fails fast instead of waiting for a network', async () => {
    const expectError = async (res: Response, status: number, pattern: RegExp): Promise<void> => {
      expect(res.status).to.equal(status)
      const body = (await res.json()) as KuboErrorBody
      expect(body.Type).to.equal('error')
      expect(body.Code).to.equal(status === 400 ? 1 : 0)
      expect(body.Message).to.match(pattern)
    }
    const started = Date.now()
    await expectError(await rpc(`cat?arg=${ABSENT}`), 500, /not found locally/)
    expect(Date.now() - started).to.be.below(2000)
    await expectError(await rpc('cat?arg=not-a-cid'), 400, /not a valid CID/)
    await expectError(await rpc('cat'), 400, /argument "ipfs-path" is required/)
    await expectError(await rpc(`cat?arg=${HELLO}&offset=-1`), 400, /negative offset/)
    await expectError(await rpc(`cat?arg=${HELLO}&length=abc`), 400, /invalid value/)
    const err = await collect(client.cat(ABSENT)).catch((e: unknown) => e)
    expect(String(err)).to.match(/not found locally/)
    expect((await rpc('version', { method: 'GET' })).status).to.equal(405)
    expect((await rpc('no-such-command')).status).to.equal(404)
    expect((await rpc('version', { headers: { Origin: 'https://evil.example' } })).status).to.equal(403)
  })

  it('wrap-with-directory: files are reachable by path through cat and the gateway', async () => {
    const results = []
    for await (const r of client.addAll(
      [
        { path: 'hello.txt', content: Buffer.from('Hello Worlds!\n') },
        { path: 'sub/deeper.txt', content: Buffer.from('deeper\n') },
        { path: 'sub/a name, ü.txt', content: Buffer.from('spaced\n') },
      ],
      { wrapWithDirectory: true },
    )) {
      results.push(r)
    }
    const root = results.at(-1)
    expect(root?.path).to.equal('') // Kubo names the wrapping directory ""
    const dir = root?.cid.toString() ?? ''
    expect(results.find((r) => r.path === 'hello.txt')?.cid.toString()).to.equal(HELLO)
    expect((await collect(client.cat(`/ipfs/${dir}/sub/deeper.txt`))).toString()).to.equal('deeper\n')
    expect((await collect(client.cat(`/ipfs/${dir}/sub/a name, ü.txt`))).toString()).to.equal('spaced\n')
    expect(await (await gw(`/ipfs/${dir}/sub/${encodeURIComponent('a name, ü.txt')}`)).text()).to.equal('spaced\n')
    const res = await gw(`/ipfs/${dir}/hello.txt`)
    expect(res.status).to.equal(200)
    expect(res.headers.get('etag')).to.equal(`"${HELLO}"`)
    expect(res.headers.get('x-ipfs-path')).to.equal(`/ipfs/${dir}/hello.txt`)
    expect(await res.text()).to.equal('Hello Worlds!\n')
    expect((await gw(`/ipfs/${dir}/missing.txt`)).status).to.equal(404)
    expect((await gw(`/ipfs/${dir}`)).status).to.equal(501)
    const catDir = await rpc(`cat?arg=${dir}`)
    expect(catDir.status).to.equal(500)
    expect(((await catDir.json()) as KuboErrorBody).Message).to.equal('this dag node is a directory')
  })

  it('malformed or truncated multipart bodies get a 400, and the process keeps serving', async () => {
    const form = (body: string, type = 'multipart/form-data; boundary=xyz'): RequestInit => ({
      method: 'POST',
      headers: { 'Content-Type': type },
      body,
    })
    const cases: Array<[RequestInit, RegExp]> = [
      [form('just bytes', 'application/octet-stream'), /expected a multipart/],
      [form('no boundary here at all'), /unexpected end/],
      [form('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc'), /unexpected end/],
      [form('--xyz\r\nthis is not a header\r\n\r\nabc\r\n--xyz--\r\n'), /malformed part header/],
      [form('--xyz--\r\n'), /argument "path" is required/],
    ]
    for (const [init, pattern] of cases) {
      const res = await rpc('add', init)
      expect(res.status, String(pattern)).to.equal(400)
      expect(((await res.json()) as KuboErrorBody).Message).to.match(pattern)
    }
    expect((await client.version()).version).to.be.a('string')
  })

  it('an error after the first file was reported breaks the response, so it cannot pass for complete', async () => {
    const body =
      '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nfirst\r\n' +
      '--xyz\r\nContent-Disposition: form-data; name="file-1"; filename="b"\r\n\r\nsecond, never termina'
    const res = await rpc('add', { headers: { 'Content-Type': 'multipart/form-data; boundary=xyz' }, body })
    expect(res.status).to.equal(200) // the first file's line was already sent
    const outcome = await res.text().catch((e: unknown) => e)
    expect(outcome).to.be.instanceOf(Error)
  })

  it('a client that gives up mid-upload does not hurt the process', async () => {
    const controller = new AbortController()
    async function* slowlyAbandoned(): AsyncGenerator<Uint8Array> {
      let sent = 0
      for await (const chunk of kuboDeterministicBytes(64 << 20, 'abandoned')) {
        yield chunk
        sent += chunk.byteLength
        if (sent >= 8 << 20) controller.abort()
      }
    }
    const outcome = await client.add(slowlyAbandoned(), { signal: controller.signal }).catch((e: unknown) => e)
    expect(outcome).to.be.instanceOf(Error)
    expect(isAlive(ipfs?.proc.pid ?? 0)).to.equal(true)
    expect(await (await rpc(`cat?arg=${HELLO}`)).text()).to.equal('Hello Worlds!\n')
  })
})
