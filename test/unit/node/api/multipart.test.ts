import { expect } from 'chai'
import type { Hash } from '../../../../node/core/ids.js'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Koa from 'koa'
import { ApiRouter } from '../../../../node/api/router.js'
import { errorMiddleware } from '../../../../node/api/errors.js'
import { dataRoutes } from '../../../../node/api/routes/data.js'
import { closeServer, listen } from '../../../../node/core/listen.js'
import { Database } from '../../../../node/db/database.js'
import { migrations } from '../../../../node/db/schema/index.js'
import { DataRepo } from '../../../../node/db/repos/data.js'
import { BlobsRepo } from '../../../../node/db/repos/blobs.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { DataUploader } from '../../../../node/data/upload.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import type { NodeServices } from '../../../../node/services.js'
import { waitFor } from '../../../../network/process.js'
import { snapshotInThread } from '../../../support/repos.js'

const sha256 = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex')

interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
  json: { error?: string; id?: string; hash?: string; value?: unknown; blob?: { hash: string; size: number; name: string } }
}

type Part = { name: string; value: string } | { name: string; filename: string; type?: string; content: Buffer | string }

function multipart(parts: Part[], boundary = 'XyZzy0123'): Buffer {
  const out: Buffer[] = []
  for (const p of parts) {
    if ('filename' in p) {
      out.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.type ?? 'application/octet-stream'}\r\n\r\n`))
      out.push(Buffer.isBuffer(p.content) ? p.content : Buffer.from(p.content))
      out.push(Buffer.from('\r\n'))
    } else {
      out.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`))
    }
  }
  out.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(out)
}

/**
 * The upload route over a real database, blob store and HTTP server on loopback: the same code a node runs,
 * without a chain. Known datatypes: `thing/1` requires a string `name`.
 */
describe('multipart upload (POST /data)', function () {
  let dir: string
  let db: Database
  let data: DataRepo
  let server: http.Server
  let port: number
  let logs: string[]

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-upload-'))
    db = await Database.open({ dir: join(dir, 'db'), migrations, buildSnapshot: snapshotInThread })
    data = new DataRepo(db)
    const blobs = new BlobsRepo(db)
    const blobStore = await BlobStore.open(join(dir, 'blobs'))
    const validator = new DataValidatorImpl((_ns, name, version) =>
      name === 'thing' && version === '1' ? { check: (raw: string) => (/"name":"/.test(raw) ? undefined : 'must have property name'), orderedAt: 0 } : undefined,
    )
    const services = {
      query: { data, heldBlob: async (hash: Hash) => (blobs.has(hash) ? await blobStore.read(hash) : undefined) },
      uploader: new DataUploader({ db, data, blobs, blobStore, validator, maxBlobBytes: 4 * 1024 * 1024 }),
    } as unknown as NodeServices
    const app = new Koa()
    app.silent = true
    logs = []
    app.use(errorMiddleware((l) => logs.push(l)))
    const api = new ApiRouter(services)
    dataRoutes(api)
    app.use(api.routes())
    server = http.createServer(app.callback())
    await listen(server, 0, '127.0.0.1')
    port = (server.address() as AddressInfo).port
  })

  after(async () => {
    await closeServer(server)
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  afterEach(() => {
    expect(logs, 'nothing a client sends is a server error').to.deep.equal([])
  })

  function post(body: Buffer | string, contentType = 'multipart/form-data; boundary=XyZzy0123', path = '/api/v1/namespaces/up/data'): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, agent: false, method: 'POST', path, headers: { 'content-type': contentType, 'content-length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let json = {}
          try {
            json = JSON.parse(text)
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json })
        })
      })
      req.on('error', reject)
      req.end(body)
    })
  }

  const rows = (): number => data.list('up', { limit: 1000, skip: 0 }).length
  const tmpFiles = (): string[] => readdirSync(join(dir, 'blobs', 'tmp'))

  it('takes the fields, then streams the file: autometa value, blob ref and hash', async () => {
    const content = randomBytes(300_000)
    const r = await post(
      multipart([
        { name: 'metadata', value: '{"z": 1, "a": {"y": 2.50, "b": true}, "filename": "old"}' },
        { name: 'autometa', value: 'true' },
        { name: 'file', filename: 'photo.jpg', type: 'image/jpeg', content },
      ]),
    )
    expect(r.status, r.body).to.equal(200)
    const value = '{"a":{"b":true,"y":2.5},"filename":"photo.jpg","mimetype":"image/jpeg","size":300000,"z":1}'
    expect(JSON.stringify(r.json.value)).to.equal(JSON.stringify(JSON.parse(value)))
    expect(r.body).to.contain(`"value":${value}`)
    const blobHash = sha256(content)
    expect(r.json.blob).to.deep.equal({ hash: blobHash, size: 300_000, name: 'photo.jpg' })
    expect(r.json.hash).to.equal(sha256(sha256(value) + blobHash))
    expect(data.get(r.json.id!)?.blob?.hash).to.equal(blobHash)
    expect(existsSync(join(dir, 'blobs', blobHash))).to.equal(true)
  })

  it('reads a UTF-8 filename as UTF-8 (busboy would default to Latin-1)', async () => {
    const r = await post(multipart([{ name: 'autometa', value: 'true' }, { name: 'file', filename: 'résumé 履歴書.pdf', content: 'x' }]))
    expect(r.status, r.body).to.equal(200)
    expect((r.json.value as { filename: string }).filename).to.equal('résumé 履歴書.pdf')
    expect(r.json.blob?.name).to.equal('résumé 履歴書.pdf')
  })

  it('without metadata or autometa the value is null and the data hash is the blob hash', async () => {
    const r = await post(multipart([{ name: 'file', filename: 'a.bin', content: 'hello' }]))
    expect(r.status, r.body).to.equal(200)
    expect(r.json.value).to.equal(null)
    expect(r.json.hash).to.equal(sha256('hello'))
    expect(r.json.blob).to.deep.equal({ hash: sha256('hello'), size: 5, name: '' })
  })

  it('an empty file is a blob too', async () => {
    const r = await post(multipart([{ name: 'file', filename: 'empty', content: '' }]))
    expect(r.status, r.body).to.equal(200)
    expect(r.json.blob).to.deep.equal({ hash: sha256(''), size: 0, name: '' })
  })

  it('refuses a form field after the file (400) and records nothing', async () => {
    const before = rows()
    const r = await post(multipart([{ name: 'file', filename: 'a.bin', content: 'abc' }, { name: 'autometa', value: 'true' }]))
    expect(r.status).to.equal(400)
    expect(r.json.error).to.match(/^BAD_REQUEST: .*"autometa" comes after the file part/)
    expect(rows()).to.equal(before)
  })

  it('refuses a second file part (400)', async () => {
    const before = rows()
    const r = await post(multipart([{ name: 'file', filename: 'a.bin', content: 'abc' }, { name: 'file2', filename: 'b.bin', content: 'def' }]))
    expect(r.status).to.equal(400)
    expect(r.json.error).to.match(/second file part/)
    expect(rows()).to.equal(before)
  })

  it('refuses a form without a file part (400)', async () => {
    const r = await post(multipart([{ name: 'autometa', value: 'true' }]))
    expect(r.status).to.equal(400)
    expect(r.json.error).to.match(/no file part/)
  })

  it('refuses a "file" part sent as a plain field (400)', async () => {
    const r = await post(Buffer.from(`--XyZzy0123\r\nContent-Disposition: form-data; name="file"\r\n\r\nhello\r\n--XyZzy0123--\r\n`))
    expect(r.status).to.equal(400)
    expect(r.json.error).to.match(/no filename/)
  })

  it('refuses malformed bodies (400): no closing boundary, a bad part header, no boundary parameter', async () => {
    const whole = multipart([{ name: 'file', filename: 'a.bin', content: 'abc' }])
    const truncated = await post(whole.subarray(0, whole.length - 20))
    expect(truncated.status).to.equal(400)
    expect(truncated.json.error).to.match(/^BAD_REQUEST: /)
    const badHeader = await post(Buffer.from(`--XyZzy0123\r\nContent-Disposition form-data\r\n\r\nhello\r\n--XyZzy0123--\r\n`))
    expect(badHeader.status).to.equal(400)
    const noBoundary = await post(whole, 'multipart/form-data')
    expect(noBoundary.status).to.equal(400)
    expect(noBoundary.json.error).to.match(/Boundary/)
    expect(tmpFiles()).to.deep.equal([])
  })

  it('refuses bad field values before reading the file (400)', async () => {
    const r = await post(multipart([{ name: 'autometa', value: 'maybe' }, { name: 'file', filename: 'a.bin', content: randomBytes(100_000) }]))
    expect(r.status).to.equal(400)
    expect(r.json.error).to.match(/autometa must be true or false/)
    const v = await post(multipart([{ name: 'validator', value: 'xml' }, { name: 'file', filename: 'a.bin', content: 'x' }]))
    expect(v.status).to.equal(400)
    expect(v.json.error).to.match(/validator/)
  })

  it('refuses an oversize form field (413) and a blob over the node limit (413), keeping no temporary file', async () => {
    const big = await post(multipart([{ name: 'metadata', value: 'x'.repeat(1024 * 1024 + 1) }, { name: 'file', filename: 'a.bin', content: 'x' }]))
    expect(big.status).to.equal(413)
    const huge = await post(multipart([{ name: 'file', filename: 'a.bin', content: randomBytes(5 * 1024 * 1024) }]))
    expect(huge.status).to.equal(413)
    expect(huge.json.error).to.match(/^PAYLOAD_TOO_LARGE: /)
    await waitFor('temporary files to go', () => tmpFiles().length === 0, { timeoutMs: 5000, intervalMs: 20 })
  })

  it('validates against the named datatype: unknown 400, non-conforming 400, conforming 200', async () => {
    const before = rows()
    const content = randomBytes(1000)
    const unknown = await post(multipart([{ name: 'datatype.name', value: 'nope' }, { name: 'datatype.version', value: '1' }, { name: 'file', filename: 'a.bin', content }]))
    expect(unknown.status).to.equal(400)
    expect(unknown.json.error).to.match(/^UNKNOWN_DATATYPE: /)
    expect(existsSync(join(dir, 'blobs', sha256(content))), 'refused before the blob was stored').to.equal(false)
    const fails = await post(
      multipart([{ name: 'datatype.name', value: 'thing' }, { name: 'datatype.version', value: '1' }, { name: 'autometa', value: 'true' }, { name: 'file', filename: 'a.bin', content: 'x' }]),
    )
    expect(fails.status).to.equal(400)
    expect(fails.json.error).to.match(/^SCHEMA_VALIDATION_FAILED: .*name/)
    expect(rows()).to.equal(before)
    const ok = await post(
      multipart([{ name: 'datatype.name', value: 'thing' }, { name: 'datatype.version', value: '1' }, { name: 'metadata', value: '{"name":"n"}' }, { name: 'autometa', value: 'true' }, { name: 'file', filename: 'a.bin', content: 'x' }]),
    )
    expect(ok.status, ok.body).to.equal(200)
    expect(ok.json.blob?.name, 'value.name names the blob').to.equal('n')
  })

  it('answers 415 to a body that is neither JSON nor multipart, and 413 to an oversize JSON body', async () => {
    const r = await post('<x/>', 'application/xml')
    expect(r.status).to.equal(415)
    const big = await post(`{"value":"${'x'.repeat(16 * 1024 * 1024)}"}`, 'application/json')
    expect(big.status).to.equal(413)
  })

  it('a client that disconnects mid-file leaves no temporary file, no blob and no data row, and the server carries on', async () => {
    const before = rows()
    const head = `--XyZzy0123\r\nContent-Disposition: form-data; name="autometa"\r\n\r\ntrue\r\n--XyZzy0123\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`
    const req = http.request({ host: '127.0.0.1', port, agent: false, method: 'POST', path: '/api/v1/namespaces/up/data', headers: { 'content-type': 'multipart/form-data; boundary=XyZzy0123', 'content-length': 10_000_000 } })
    req.on('error', () => {})
    req.write(head)
    req.write(randomBytes(1_000_000))
    // The server has started the blob: its temporary file exists.
    await waitFor('the upload to start', () => tmpFiles().length === 1, { timeoutMs: 5000, intervalMs: 10 })
    req.destroy()
    await waitFor('the temporary file to be removed', () => tmpFiles().length === 0, { timeoutMs: 5000, intervalMs: 10 })
    expect(rows()).to.equal(before)
    const next = await post(multipart([{ name: 'file', filename: 'after.bin', content: 'still here' }]))
    expect(next.status).to.equal(200)
  })

  it('a client that disconnects while sending fields leaves nothing behind', async () => {
    const before = rows()
    const req = http.request({ host: '127.0.0.1', port, agent: false, method: 'POST', path: '/api/v1/namespaces/up/data', headers: { 'content-type': 'multipart/form-data; boundary=XyZzy0123', 'content-length': 1000 } })
    req.on('error', () => {})
    req.write(`--XyZzy0123\r\nContent-Disposition: form-data; name="metadata"\r\n\r\nsome`)
    await new Promise((r) => setTimeout(r, 100))
    req.destroy()
    await new Promise((r) => setTimeout(r, 100))
    expect(rows()).to.equal(before)
    expect(tmpFiles()).to.deep.equal([])
  })

  it('keeps a keep-alive connection usable after a refused upload', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const send = (body: Buffer): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v1/namespaces/up/data', agent, headers: { 'content-type': 'multipart/form-data; boundary=XyZzy0123' } }, (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        })
        req.on('error', reject)
        req.end(body)
      })
    try {
      expect(await send(multipart([{ name: 'file', filename: 'a', content: 'a' }, { name: 'x', value: 'late' }]))).to.equal(400)
      expect(await send(multipart([{ name: 'file', filename: 'b', content: 'b' }]))).to.equal(200)
    } finally {
      agent.destroy()
    }
  })

  it('serves the blob back with its headers; 404 for data without a blob', async () => {
    const content = randomBytes(70_000)
    const up = await post(multipart([{ name: 'metadata', value: '{"path":"dir/sub","filename":"résumé \\"1\\".pdf"}' }, { name: 'file', filename: 'x.pdf', content }]))
    expect(up.status, up.body).to.equal(200)
    expect(up.json.blob?.name).to.equal('dir/sub/résumé "1".pdf')
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/namespaces/up/data/${up.json.id}/blob`)
    expect(res.status).to.equal(200)
    expect(Buffer.from(await res.arrayBuffer()).equals(content)).to.equal(true)
    expect(res.headers.get('content-type')).to.equal('application/octet-stream')
    expect(res.headers.get('content-length')).to.equal('70000')
    expect(res.headers.get('x-ff-blob-hash-sha256')).to.equal(sha256(content))
    expect(res.headers.get('x-ff-blob-size')).to.equal('70000')
    expect(res.headers.get('content-disposition')).to.equal(`attachment; filename="r_sum_ _1_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%221%22.pdf`)
    const json = await post('{"value":{"a":1}}', 'application/json')
    expect(json.status).to.equal(200)
    const none = await fetch(`http://127.0.0.1:${port}/api/v1/namespaces/up/data/${json.json.id}/blob`)
    expect(none.status).to.equal(404)
  })
})
