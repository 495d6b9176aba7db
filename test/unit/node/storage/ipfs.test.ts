import { expect } from 'chai'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { createNodeCertificate } from '../../../../network/tls.js'
import { createIpfsStorage } from '../../../../node/storage/ipfs.js'
import type { SharedStorage } from '../../../../node/storage/shared-storage.js'
import { bodyOf, ScriptedServer } from '../../../support/scripted-server.js'
import { waitUntil } from '../../../support/wait.js'

const CID_V0 = 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o'
const CID_V1 = 'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi'

/**
 * The IPFS storage against loopback servers playing Kubo's API and gateway: what a probe makes of each answer, the
 * watch's two log lines, and how a download names a gateway's refusal.
 */
describe('storage: IPFS client', () => {
  let api: ScriptedServer
  let gateway: ScriptedServer
  let storage: SharedStorage
  let lines: string[]

  before(async () => {
    api = await ScriptedServer.start()
    gateway = await ScriptedServer.start()
  })
  after(async () => {
    await api.stop()
    await gateway.stop()
  })
  beforeEach(() => {
    lines = []
    api.requests.length = 0
    gateway.requests.length = 0
    storage = createIpfsStorage({ api: api.url, gateway: gateway.url, log: (l) => lines.push(l) })
  })
  afterEach(() => storage.stop())

  const version = (body: string, status = 200) => {
    api.handler = (req, res) => {
      if (req.method !== 'POST' || req.url !== '/api/v0/version') return res.writeHead(405).end()
      res.writeHead(status).end(body)
    }
  }
  async function read(ref: string, signal?: AbortSignal): Promise<string> {
    let text = ''
    for await (const c of storage.download(ref, signal)) text += Buffer.from(c).toString()
    return text
  }
  const failure = (p: Promise<unknown>): Promise<Error> =>
    p.then(
      () => {
        throw new Error('expected a rejection')
      },
      (e: unknown) => e as Error,
    )

  it('probes the API\'s version: connected with it, or without one when the answer names none', async () => {
    version('{"Version":"0.30.0","Commit":""}')
    expect(await storage.probe()).to.deep.equal({ connected: true, api: api.url, gateway: gateway.url, version: '0.30.0' })
    version('{"Version":30}')
    expect(await storage.probe()).to.deep.equal({ connected: true, api: api.url, gateway: gateway.url })
  })

  it('reports an API that answers other than 200, or not JSON, as not connected, with the answer', async () => {
    version('x'.repeat(400), 500)
    expect(await storage.probe()).to.deep.equal({ connected: false, api: api.url, gateway: gateway.url, error: `cannot reach IPFS API ${api.url}: /api/v0/version answered 500: ${'x'.repeat(300)}` })
    version('<html>')
    const s = await storage.probe()
    expect(s.connected).to.equal(false)
    expect(s.error).to.match(new RegExp(`^cannot reach IPFS API ${api.url}: .*JSON`))
  })

  it('reports an API that does not answer within the probe\'s time', async () => {
    api.handler = () => {}
    const patient = createIpfsStorage({ api: api.url, gateway: gateway.url, log: () => {}, probeTimeoutMs: 100 })
    try {
      expect((await patient.probe()).error).to.equal(`cannot reach IPFS API ${api.url}: no answer within 100 ms`)
    } finally {
      await patient.stop()
    }
  })

  it('watches an API that fails: one line while it fails, one when it answers, and nothing more', async () => {
    version('down', 503)
    storage.start()
    await waitUntil('a second probe', () => api.requests.length >= 2, { intervalMs: 10 })
    expect(lines).to.deep.equal([`ipfs: cannot reach IPFS API ${api.url}: /api/v0/version answered 503: down; retrying`])
    version('{}')
    await waitUntil('the line saying it connected', () => lines.length === 2, { intervalMs: 10 })
    expect(lines[1]).to.equal(`ipfs: connected to ${api.url} (unknown version)`)
    const probes = api.requests.length
    await new Promise((r) => setTimeout(r, 400))
    expect(api.requests.length, 'probes once connected').to.equal(probes)
  })

  it('neither logs nor probes again once stopped while its first probe was in flight, and never probes once stopped', async () => {
    let answer: () => void = () => {}
    api.handler = (_req, res) => (answer = () => res.writeHead(503).end('down'))
    storage.start()
    await waitUntil('the first probe', () => api.requests.length === 1, { intervalMs: 5 })
    await storage.stop()
    answer()
    await new Promise((r) => setTimeout(r, 400))
    expect(lines).to.deep.equal([])
    expect(api.requests).to.have.length(1)
    storage.start()
    await new Promise((r) => setTimeout(r, 50))
    expect(api.requests, 'probes after start() on a stopped storage').to.have.length(1)
  })

  it('logs nothing when the API answers at the first probe', async () => {
    version('{"Version":"0.30.0"}')
    storage.start()
    await waitUntil('the first probe', () => api.requests.length === 1, { intervalMs: 10 })
    await new Promise((r) => setTimeout(r, 50))
    expect(lines).to.deep.equal([])
  })

  it('uploads with Kubo\'s add defaults for CIDv0, under the name given or file.bin', async () => {
    const names: string[] = []
    api.handler = async (req, res) => {
      names.push(/filename="([^"]*)"/.exec((await bodyOf(req)).toString())![1]!)
      res.end(`{"Hash":"${CID_V0}"}`)
    }
    expect(await storage.upload(new Uint8Array([1]))).to.equal(CID_V0)
    expect(await storage.upload(new Uint8Array([1]), 'batch.json')).to.equal(CID_V0)
    expect(api.requests).to.deep.equal(['/api/v0/add?cid-version=0&raw-leaves=false&pin=true', '/api/v0/add?cid-version=0&raw-leaves=false&pin=true'])
    expect(names).to.deep.equal(['file.bin', 'batch.json'])
  })

  it('downloads through the gateway by CID, and names the gateway and the status it refused with', async () => {
    gateway.handler = (req, res) => (req.url === `/ipfs/${CID_V1}` ? res.end('the bytes') : res.writeHead(404).end('no link'))
    expect(await read(CID_V1)).to.equal('the bytes')
    expect((await failure(read(CID_V0))).message).to.equal(`ipfs gateway ${gateway.url} answered 404 for ${CID_V0}`)
  })

  it('speaks TLS to an https gateway, refusing one whose certificate it cannot verify', async () => {
    const tls = await createNodeCertificate('ipfs', 'gateway')
    const secure = https.createServer({ cert: tls.cert, key: tls.key }, (_req, res) => res.end('over TLS'))
    await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r))
    const url = `https://127.0.0.1:${(secure.address() as AddressInfo).port}`
    const overTls = createIpfsStorage({ api: api.url, gateway: url, log: () => {} })
    try {
      const err = await failure(
        (async () => {
          for await (const _c of overTls.download(CID_V0));
        })(),
      )
      expect(err.message).to.equal(`cannot reach IPFS gateway ${url}: self-signed certificate`)
    } finally {
      await overTls.stop()
      secure.closeAllConnections()
      await new Promise((r) => secure.close(r))
    }
  })

  it('abandons a download when its signal aborts, rejecting with the signal\'s reason as it is', async () => {
    gateway.handler = (_req, res) => {
      res.writeHead(200, { 'content-length': '100' })
      res.write('part')
    }
    const abort = new AbortController()
    const reason = new Error('the batch is no longer needed')
    const chunks: string[] = []
    const err = await failure(
      (async () => {
        for await (const c of storage.download(CID_V0, abort.signal)) {
          chunks.push(Buffer.from(c).toString())
          abort.abort(reason)
        }
      })(),
    )
    expect(err).to.equal(reason)
    expect(chunks).to.deep.equal(['part'])
    expect((await failure(read(CID_V0, abort.signal))) === reason, 'an aborted signal before the transfer').to.equal(true)
  })
})
