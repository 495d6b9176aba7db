import { expect } from 'chai'
import { createHash } from 'node:crypto'
import http from 'node:http'
import { connect } from 'node:net'
import { closeServer, listen } from '../../../../node/core/listen.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { exchangeRoutes, BATCHES_PATH, BLOBS_PREFIX, BLOB_SIZE_HEADER, type RouteDeps } from '../../../../node/exchange/routes.js'
import { PeerUsage } from '../../../../node/exchange/peer-usage.js'
import { RefusalLog } from '../../../../node/exchange/refusal-log.js'
import type { BatchPayload } from '../../../../node/model/index.js'
import type { BlobHandler, BatchHandler, BlobRef, Peer } from '../../../../node/exchange/types.js'
import { freePort } from '../../../../network/process.js'
import { waitUntil } from '../../../support/wait.js'

const PEER = { node: 'did:firefly:node/node1', org: 'org1' } as Peer
const TRUSTED = 'AA:BB'
const MAX_BATCH = 1000

interface Answer {
  status: number
  error: string | undefined
  headers: http.IncomingHttpHeaders
}

/**
 * What the exchange routes answer a peer for each thing it gets wrong, over a real socket (the endpoint's TLS left
 * out: the routes get the client's fingerprint as the endpoint hands it). Each refusal is answered with its status
 * and code, logged as a refusal, and what was refused never reaches the handler.
 */
describe('exchange routes: refusals', () => {
  let server: http.Server
  let port: number
  let refusalLines: string[]
  let logLines: string[]
  let usage: PeerUsage
  let batches: BatchPayload[]
  let batchHandler: BatchHandler
  let blobHandler: BlobHandler
  let overrides: Partial<RouteDeps>

  before(async () => {
    server = http.createServer((req, res) => {
      const deps: RouteDeps = {
        peerOf: (fingerprint) => (fingerprint === TRUSTED ? PEER : undefined),
        batchHandler: () => batchHandler,
        blobHandler: () => blobHandler,
        parseBatch: (text) => JSON.parse(text) as BatchPayload,
        maxBatchBytes: MAX_BATCH,
        usage,
        refusals: new RefusalLog({ perMinute: 100, log: (l) => refusalLines.push(l) }),
        batchBodyMs: 10_000,
        log: (l) => logLines.push(l),
        ...overrides,
      }
      const fingerprint = String(req.headers['x-test-fingerprint'] ?? TRUSTED)
      exchangeRoutes(deps)(req, res, { org: 'org1', cert: '', fingerprint })
    })
    // As the p2p endpoint does: the route sends 100 Continue itself when it wants the body.
    server.on('checkContinue', (req, res) => server.emit('request', req, res))
    port = await freePort()
    await listen(server, port, '127.0.0.1')
  })
  after(() => closeServer(server))

  beforeEach(() => {
    refusalLines = []
    logLines = []
    usage = new PeerUsage({ requestsPerOrg: 4, batchBytesPerOrg: 10_000 })
    batches = []
    batchHandler = async (_peer, payload) => {
      batches.push(payload)
    }
    blobHandler = async (_peer, _blob, body) => {
      for await (const _chunk of body);
    }
    overrides = {}
  })

  /** Sends one request; `body` as chunks is sent chunked (no content-length), a string with its length. */
  function send(method: string, path: string, headers: Record<string, string>, body?: string | Buffer[]): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const length = typeof body === 'string' && headers['content-length'] === undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}
      const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...length }, agent: false }, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode!, error: text ? (JSON.parse(text) as { error: string }).error : undefined, headers: res.headers }))
      })
      req.on('error', reject)
      const write = (): void => {
        if (Array.isArray(body)) for (const b of body) req.write(b)
        else if (body !== undefined) req.write(body)
        req.end()
      }
      if (headers.expect) req.once('continue', write)
      else write()
      // A refusal answered before the body was asked for: the body is never sent.
      if (headers.expect) req.once('response', () => req.end())
    })
  }
  const json = { 'content-type': 'application/json' }
  const batch = (id: string) => JSON.stringify({ id })
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

  it('answers 401 to a certificate that is no trusted peer\'s, naming its org and fingerprint in the refusal line', async () => {
    const a = await send('POST', BATCHES_PATH, { ...json, 'x-test-fingerprint': 'CC:DD' }, batch('b1'))
    expect(a).to.deep.include({ status: 401, error: 'UNAUTHORIZED: the client certificate is not that of a trusted peer node' })
    expect(refusalLines).to.deep.equal([`exchange: refused POST ${BATCHES_PATH} from org org1 (certificate sha256 CC:DD): the certificate is not that of a trusted peer node`])
    expect(batches).to.deep.equal([])
  })

  it('answers 404 to another path and 405, naming the method allowed, to another method', async () => {
    expect(await send('GET', '/api/v1/other?x=1', {})).to.deep.include({ status: 404, error: 'NOT_FOUND: no route for GET /api/v1/other' })
    const get = await send('GET', BATCHES_PATH, {})
    expect(get).to.deep.include({ status: 405, error: `METHOD_NOT_ALLOWED: GET ${BATCHES_PATH}; use POST` })
    expect(get.headers.allow).to.equal('POST')
    const post = await send('POST', `${BLOBS_PREFIX}${'0'.repeat(64)}`, {})
    expect(post).to.deep.include({ status: 405, error: `METHOD_NOT_ALLOWED: POST ${BLOBS_PREFIX}${'0'.repeat(64)}; use PUT` })
    expect(post.headers.allow).to.equal('PUT')
  })

  it('answers 429, naming the quota, to an org with its share of requests in flight; the request holds none of it', async () => {
    const held = [usage.admit('org1', 'n'), usage.admit('org1', 'n'), usage.admit('org1', 'n'), usage.admit('org1', 'n')]
    const a = await send('POST', BATCHES_PATH, json, batch('b1'))
    expect(a.status).to.equal(429)
    expect(a.error).to.match(/^TOO_MANY_REQUESTS: org org1 already has 4 requests in flight .*\(quotas\.inFlightRequestsPerOrg\)$/)
    expect(a.headers.connection, 'the unread body is not read: the connection closes').to.equal('close')
    expect(refusalLines[0]).to.match(new RegExp(`^exchange: refused POST ${BATCHES_PATH} from did:firefly:node/node1 \\(org1\\): TOO_MANY_REQUESTS`))
    for (const t of held) if (typeof t !== 'string') t.release()
    expect(usage.of('org1')).to.deep.equal({ requests: 0, bytes: 0 })
  })

  it('refuses a batch not sent as JSON (415), declared over the limit (413) or over the org\'s bytes in flight (429)', async () => {
    expect(await send('POST', BATCHES_PATH, { 'content-type': 'text/plain' }, batch('b1'))).to.deep.include({ status: 415, error: 'UNSUPPORTED_MEDIA_TYPE: a batch is sent as application/json, not text/plain' })
    expect(await send('POST', BATCHES_PATH, {}, batch('b1'))).to.deep.include({ status: 415, error: 'UNSUPPORTED_MEDIA_TYPE: a batch is sent as application/json, not without a content type' })
    const big = 'x'.repeat(MAX_BATCH + 1)
    expect(await send('POST', BATCHES_PATH, json, big)).to.deep.include({ status: 413, error: `PAYLOAD_TOO_LARGE: the batch is ${MAX_BATCH + 1} bytes; at most ${MAX_BATCH} are accepted` })
    usage = new PeerUsage({ requestsPerOrg: 4, batchBytesPerOrg: 5 })
    const a = await send('POST', BATCHES_PATH, json, batch('b1'))
    expect(a.status).to.equal(429)
    expect(a.error).to.equal('TOO_MANY_REQUESTS: org org1 already has 0 bytes of batches in flight here over all its nodes; 11 more would pass 5 (quotas.inFlightBatchBytesPerOrg)')
    expect(batches).to.deep.equal([])
    expect(refusalLines).to.have.length(4)
    expect(usage.of('org1')).to.deep.equal({ requests: 0, bytes: 0 })
  })

  it('cuts off a chunked batch once it passes the limit (413) or the org\'s bytes in flight (429)', async () => {
    const chunks = Array.from({ length: 11 }, () => Buffer.from('x'.repeat(100)))
    const a = await send('POST', BATCHES_PATH, json, chunks).catch((e: Error) => e)
    // The answer may come before the client has sent its last chunk, and the connection then closes under it.
    if (!(a instanceof Error)) expect(a).to.deep.include({ status: 413, error: `PAYLOAD_TOO_LARGE: the batch is over ${MAX_BATCH} bytes, the most accepted` })
    await waitUntil('the refusal is logged', () => refusalLines.length === 1, { intervalMs: 5 })
    expect(refusalLines[0]).to.contain('PAYLOAD_TOO_LARGE: the batch is over 1000 bytes')

    usage = new PeerUsage({ requestsPerOrg: 4, batchBytesPerOrg: 150 })
    const b = await send('POST', BATCHES_PATH, json, [Buffer.from('x'.repeat(100)), Buffer.from('x'.repeat(100))]).catch((e: Error) => e)
    if (!(b instanceof Error)) expect(b.status).to.equal(429)
    await waitUntil('the refusal is logged', () => refusalLines.length === 2, { intervalMs: 5 })
    expect(refusalLines[1]).to.contain('TOO_MANY_REQUESTS: org org1 already has 100 bytes of batches in flight here')
    expect(batches).to.deep.equal([])
    expect(usage.of('org1')).to.deep.equal({ requests: 0, bytes: 0 })
  })

  it('refuses a body that is not UTF-8, and a batch the parser refuses, as BAD_PEER_DATA (400)', async () => {
    expect(await send('POST', BATCHES_PATH, json, [Buffer.from([0x7b, 0xff, 0xfe, 0x7d])])).to.deep.include({ status: 400, error: 'BAD_PEER_DATA: malformed batch: the body is not UTF-8' })
    const notJson = await send('POST', BATCHES_PATH, json, '{"id":')
    expect(notJson.status).to.equal(400)
    expect(notJson.error).to.match(/^BAD_PEER_DATA: malformed batch: .*JSON/)
    overrides = {
      parseBatch: () => {
        throw new ParleyError('BAD_PEER_DATA', 'batch hash does not match')
      },
    }
    expect(await send('POST', BATCHES_PATH, json, batch('b1'))).to.deep.include({ status: 400, error: 'BAD_PEER_DATA: batch hash does not match' })
    expect(batches).to.deep.equal([])
  })

  it('answers what the admission check or the handler says: 503 not now, 400, 429, 507 a quota, 500 anything else', async () => {
    overrides = {
      batchAdmission: () => {
        throw new ParleyError('UNAVAILABLE', 'the database is catching up')
      },
    }
    expect(await send('POST', BATCHES_PATH, json, batch('b0'))).to.deep.include({ status: 503, error: 'UNAVAILABLE: the database is catching up' })
    overrides = {}
    const cases: [Error, number, string][] = [
      [new ParleyError('BAD_PEER_DATA', 'a message is in another namespace'), 400, 'BAD_PEER_DATA: a message is in another namespace'],
      [new ParleyError('TOO_MANY_REQUESTS', 'over the unpinned batches quota'), 429, 'TOO_MANY_REQUESTS: over the unpinned batches quota'],
      [new ParleyError('STORAGE_FULL', 'the disk is full'), 507, 'STORAGE_FULL: the disk is full'],
      [new Error('a bug'), 500, 'INTERNAL: a bug'],
    ]
    for (const [err, status, error] of cases) {
      batchHandler = async () => {
        throw err
      }
      expect(await send('POST', BATCHES_PATH, json, batch('b1')), error).to.deep.include({ status, error })
    }
    expect(refusalLines.slice(1)).to.deep.equal(cases.map(([, , error]) => `exchange: refused batch b1 from did:firefly:node/node1 (org1): ${error}`))
    expect(usage.of('org1')).to.deep.equal({ requests: 0, bytes: 0 })
  })

  it('asks for a batch\'s body under Expect: 100-continue once admitted, and stores it (204)', async () => {
    expect(await send('POST', BATCHES_PATH, { ...json, expect: '100-continue' }, batch('b1'))).to.deep.include({ status: 204, error: undefined })
    expect(batches).to.deep.equal([{ id: 'b1' }])
    overrides = { batchAdmission: () => { throw new ParleyError('TOO_MANY_REQUESTS', 'too many unpinned batches') } }
    const refused = await send('POST', BATCHES_PATH, { ...json, expect: '100-continue', 'content-length': '11' })
    expect(refused).to.deep.include({ status: 429, error: 'TOO_MANY_REQUESTS: too many unpinned batches' })
    expect(refused.headers.connection).to.equal('close')
    expect(batches).to.have.length(1)
  })

  it('drops, with a log line and no answer, a batch whose body stops short of its length or takes too long', async () => {
    overrides = { batchBodyMs: 100 }
    const s = connect(port, '127.0.0.1')
    try {
      const closed = new Promise((r) => s.once('close', r))
      s.on('error', () => {})
      s.write(`POST ${BATCHES_PATH} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"id":`)
      let answer = ''
      s.on('data', (c: Buffer) => (answer += c.toString()))
      await closed
      expect(answer, 'nobody hears an answer').to.equal('')
      expect(logLines).to.deep.equal(['exchange: a batch from did:firefly:node/node1 (org1) did not arrive whole: the body took longer than 100 ms'])
      expect(refusalLines).to.deep.equal([])
      expect(batches).to.deep.equal([])
      expect(usage.of('org1')).to.deep.equal({ requests: 0, bytes: 0 })
    } finally {
      s.destroy()
    }
  })

  it('refuses a blob path that is not a sha256, and a size header that is missing, not a number or contradicted', async () => {
    const path = `${BLOBS_PREFIX}${'a'.repeat(64)}`
    expect(await send('PUT', `${BLOBS_PREFIX}${'A'.repeat(64)}`, { [BLOB_SIZE_HEADER]: '1' }, 'x')).to.deep.include({ status: 400, error: 'BAD_PEER_DATA: the blob path must end in its sha256, 64 lowercase hex characters' })
    const noSize = `BAD_PEER_DATA: header ${BLOB_SIZE_HEADER} must give the blob's length in bytes`
    expect(await send('PUT', path, {}, 'x')).to.deep.include({ status: 400, error: noSize })
    expect(await send('PUT', path, { [BLOB_SIZE_HEADER]: '-1' }, 'x')).to.deep.include({ status: 400, error: noSize })
    expect(await send('PUT', path, { [BLOB_SIZE_HEADER]: '1'.repeat(17) }, 'x')).to.deep.include({ status: 400, error: noSize })
    expect(await send('PUT', path, { [BLOB_SIZE_HEADER]: '2' }, 'x')).to.deep.include({ status: 400, error: `BAD_PEER_DATA: content-length 1 contradicts ${BLOB_SIZE_HEADER} 2` })
    expect(refusalLines[0]).to.equal(`exchange: refused blob ${'A'.repeat(64)} from did:firefly:node/node1 (org1): BAD_PEER_DATA: the blob path must end in its sha256, 64 lowercase hex characters`)
  })

  it('hands a blob to its handler counted and hashed, and refuses one longer, shorter or other than announced', async () => {
    const bytes = Buffer.from('the blob bytes')
    const stored: { blob: BlobRef; bytes: Buffer }[] = []
    blobHandler = async (_peer, blob, body) => {
      const chunks: Buffer[] = []
      for await (const c of body) chunks.push(Buffer.from(c))
      stored.push({ blob, bytes: Buffer.concat(chunks) })
    }
    const put = (hash: string, size: number, chunks: Buffer[]) => send('PUT', `${BLOBS_PREFIX}${hash}`, { [BLOB_SIZE_HEADER]: String(size), expect: '100-continue' }, chunks)
    expect(await put(sha(bytes), bytes.length, [bytes.subarray(0, 4), bytes.subarray(4)])).to.deep.include({ status: 204 })
    expect(stored).to.deep.equal([{ blob: { hash: sha(bytes), size: bytes.length }, bytes }])

    const longer = await put(sha(bytes), 4, [bytes]).catch((e: Error) => e)
    if (!(longer instanceof Error)) expect(longer).to.deep.include({ status: 400, error: `BAD_PEER_DATA: blob ${sha(bytes)} is longer than the announced 4 bytes; cut off at ${bytes.length}` })
    expect(await put(sha(bytes), bytes.length + 1, [bytes])).to.deep.include({ status: 400, error: `BAD_PEER_DATA: blob ${sha(bytes)} ended after ${bytes.length} bytes; ${bytes.length + 1} were announced` })
    const other = sha(Buffer.from('other'))
    expect(await put(other, bytes.length, [bytes])).to.deep.include({ status: 400, error: `BAD_PEER_DATA: blob announced as ${other} hashes to ${sha(bytes)}` })
    await waitUntil('the three refusals are logged', () => refusalLines.length === 3, { intervalMs: 5 })
    expect(stored, 'only the blob whole and as announced').to.have.length(1)
  })

  it('answers a blob handler\'s refusal without asking for the body, and 500 to one that resolved without reading it', async () => {
    const bytes = Buffer.from('blob')
    const headers = { [BLOB_SIZE_HEADER]: String(bytes.length), expect: '100-continue' }
    let asked = 0
    blobHandler = async () => {
      asked++
      throw new ParleyError('STORAGE_FULL', 'org1 holds its share of unreferenced blobs')
    }
    const full = await send('PUT', `${BLOBS_PREFIX}${sha(bytes)}`, headers)
    expect(full).to.deep.include({ status: 507, error: 'STORAGE_FULL: org1 holds its share of unreferenced blobs' })
    expect(full.headers.connection, 'the body was never asked for').to.equal('close')
    expect(asked).to.equal(1)

    blobHandler = async () => {}
    expect(await send('PUT', `${BLOBS_PREFIX}${sha(bytes)}`, headers)).to.deep.include({ status: 500, error: 'INTERNAL: the blob handler resolved without reading the blob through' })
  })

  it('lets a blob be read once: a handler reading it again fails with INTERNAL (500)', async () => {
    const bytes = Buffer.from('blob')
    blobHandler = async (_peer, _blob, body) => {
      for await (const _c of body);
      for await (const _c of body);
    }
    expect(await send('PUT', `${BLOBS_PREFIX}${sha(bytes)}`, { [BLOB_SIZE_HEADER]: String(bytes.length), expect: '100-continue' }, [bytes])).to.deep.include({ status: 500, error: 'INTERNAL: a received blob can be read only once' })
  })

  it('drops, with a log line and no answer, a blob whose connection breaks before its end', async () => {
    let failure: unknown
    blobHandler = async (_peer, _blob, body) => {
      try {
        for await (const _c of body);
      } catch (err) {
        failure = err
        throw err
      }
    }
    const hash = 'b'.repeat(64)
    const s = connect(port, '127.0.0.1')
    s.on('error', () => {})
    try {
      s.write(`PUT ${BLOBS_PREFIX}${hash} HTTP/1.1\r\nHost: a\r\n${BLOB_SIZE_HEADER}: 100\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n`)
      await waitUntil('the handler has begun reading', () => usage.of('org1').requests === 1, { intervalMs: 5 })
      s.destroy()
      await waitUntil('the broken blob is logged', () => logLines.length === 1, { intervalMs: 5 })
      expect(logLines[0]).to.match(new RegExp(`^exchange: blob ${hash} from did:firefly:node/node1 \\(org1\\) did not arrive whole: the connection broke after 5 of 100 bytes`))
      expect((failure as ParleyError).code).to.equal('UNAVAILABLE')
      expect(refusalLines).to.deep.equal([])
      await waitUntil('the request is given back', () => usage.of('org1').requests === 0, { intervalMs: 5 })
    } finally {
      s.destroy()
    }
  })
})
