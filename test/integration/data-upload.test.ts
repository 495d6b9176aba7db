import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import type { MemberDescription } from '../../network/description.js'
import { sharedNetwork } from '../support/shared-network.js'
import { get, nsBase, request, runId, sha256 } from '../support/api.js'
import { downloadBlob, patternBytes, uploadBlob, type ApiBlobData } from '../support/upload.js'
import { processMemory } from '../../network/process.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MiB = 1024 * 1024
const hex = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex')

/** FireFly's data hash, computed here from first principles: value only, blob only, or sha256(hex(value) ‖ hex(blob)). */
function expectedDataHash(valueText: string | null, blobHash: string): string {
  return valueText === null ? blobHash : hex(hex(valueText) + blobHash)
}

describe('data upload and read-back on a member of a real network', function () {
  this.timeout(120_000)
  const t = sharedNetwork()
  let m: MemberDescription
  let pid: number
  const run = runId()
  const ns = `up-${run}`

  before(() => {
    m = t.members[0]!
    pid = t.net.processes.find((p) => p.name === m.node)!.pid
  })

  describe('JSON values', () => {
    it('answers 200 with the data record; value {} hashes to the upstream vector', async () => {
      const r = await request<ApiBlobData>('POST', `${nsBase(m, ns)}/data`, { value: {} })
      expect(r.status, JSON.stringify(r.body)).to.equal(200)
      expect(r.contentType).to.match(/application\/json/)
      expect(r.body.id).to.match(UUID_RE)
      expect(r.body.validator).to.equal('json')
      expect(r.body.namespace).to.equal(ns)
      expect(r.body.hash).to.equal('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a')
      expect(Date.parse(r.body.created)).to.be.closeTo(Date.now(), 60_000)
      expect(r.body.value).to.deep.equal({})
      expect(r.body).not.to.have.property('blob')
      expect(Object.keys(r.body)).to.deep.equal(['id', 'validator', 'namespace', 'hash', 'created', 'value'])
      const back = await get<ApiBlobData>(`${nsBase(m, ns)}/data/${r.body.id}`)
      expect(back.status).to.equal(200)
      expect(back.body).to.deep.equal(r.body)
    })

    it('hashes the value as sent (compacted, key order and number text kept), allocates its own id, keeps the datatype tag', async () => {
      const given = '00000000-0000-4000-8000-000000000001'
      const body = `{"id":"${given}","validator":"none","datatype":{"name":"free","version":"1"},"value": { "b" : 1.50, "a" : [ "x<y" ] } }`
      const r = await request<ApiBlobData>('POST', `${nsBase(m, ns)}/data`, body)
      expect(r.status, JSON.stringify(r.body)).to.equal(200)
      expect(r.body.id).to.match(UUID_RE).and.not.equal(given)
      expect(r.body.validator).to.equal('none')
      expect(r.body.datatype).to.deep.equal({ name: 'free', version: '1' })
      expect(r.body.hash).to.equal(sha256('{"b":1.50,"a":["x\\u003cy"]}'))
      const value = await fetch(`${nsBase(m, ns)}/data/${r.body.id}/value`)
      expect(value.status).to.equal(200)
      expect(value.headers.get('content-type')).to.match(/application\/json/)
      expect(await value.text()).to.equal('{"b":1.50,"a":["x\\u003cy"]}')
    })

    it('refuses what is not a value (400), an unknown datatype (400), a non-JSON type (415)', async () => {
      const url = `${nsBase(m, ns)}/data`
      expect((await request('POST', url, {})).status).to.equal(400)
      expect((await request('POST', url, { value: null })).status).to.equal(400)
      expect((await request('POST', url, '[1]')).status).to.equal(400)
      expect((await request('POST', url, '{"value":')).status).to.equal(400)
      expect((await request('POST', url, { value: 1, validator: 'xml' })).status).to.equal(400)
      const unknown = await request<{ error: string }>('POST', url, { value: { a: 1 }, datatype: { name: `nosuch${run}`, version: '1.0.0' } })
      expect(unknown.status).to.equal(400)
      expect(unknown.body.error).to.match(/^UNKNOWN_DATATYPE: /)
      expect((await request('POST', url, '<a/>', { 'content-type': 'application/xml' })).status).to.equal(415)
    })
  })

  describe('blobs', () => {
    it('autometa: the value holds filename, mimetype and size; hashes per FireFly formula; blob named after the file', async () => {
      const bytes = randomBytes(1_234_567)
      const up = await uploadBlob(m, ns, bytes, { filename: 'report.pdf', mimetype: 'application/pdf', autometa: true, metadata: '{"owner":"org0","tags":["a"]}' })
      expect(up.status, JSON.stringify(up.body)).to.equal(200)
      const valueText = `{"filename":"report.pdf","mimetype":"application/pdf","owner":"org0","size":1234567,"tags":["a"]}`
      expect(up.body.value).to.deep.equal(JSON.parse(valueText))
      expect(up.body.blob).to.deep.equal({ hash: hex(bytes), size: 1_234_567, name: 'report.pdf' })
      expect(up.body.hash).to.equal(expectedDataHash(valueText, hex(bytes)))
      expect(await (await fetch(`${nsBase(m, ns)}/data/${up.body.id}/value`)).text()).to.equal(valueText)

      const down = await downloadBlob(m, ns, up.body.id)
      expect(down.status).to.equal(200)
      expect(down.sha256).to.equal(hex(bytes))
      expect(down.size).to.equal(bytes.length)
      expect(down.headers.get('content-type')).to.equal('application/octet-stream')
      expect(down.headers.get('content-length')).to.equal(String(bytes.length))
      expect(down.headers.get('x-ff-blob-hash-sha256')).to.equal(hex(bytes))
      expect(down.headers.get('x-ff-blob-size')).to.equal(String(bytes.length))
      expect(down.headers.get('content-disposition')).to.contain('filename="report.pdf"')
    })

    it('without autometa or metadata: value null, data hash = blob hash', async () => {
      const bytes = randomBytes(4096)
      const up = await uploadBlob(m, ns, bytes)
      expect(up.status, JSON.stringify(up.body)).to.equal(200)
      expect(up.body.value).to.equal(null)
      expect(up.body.hash).to.equal(hex(bytes))
      expect(up.body.blob).to.deep.equal({ hash: hex(bytes), size: 4096, name: '' })
      expect(await (await fetch(`${nsBase(m, ns)}/data/${up.body.id}/value`)).text()).to.equal('null')
    })

    it('metadata that is not JSON becomes a JSON string value', async () => {
      const bytes = Buffer.from('plain old bytes')
      const up = await uploadBlob(m, ns, bytes, { metadata: 'quarterly numbers, draft' })
      expect(up.status, JSON.stringify(up.body)).to.equal(200)
      expect(up.body.value).to.equal('quarterly numbers, draft')
      expect(up.body.hash).to.equal(expectedDataHash('"quarterly numbers, draft"', hex(bytes)))
    })

    it('a datatype that is not defined is refused (400), and nothing is recorded', async () => {
      const before = (await get<ApiBlobData[]>(`${nsBase(m, ns)}/data?limit=1000`)).body.length
      const up = await uploadBlob(m, ns, randomBytes(1000), { autometa: true, datatype: { name: `nosuch${run}`, version: '1.0.0' } })
      expect(up.status).to.equal(400)
      expect(up.body.error).to.match(/^UNKNOWN_DATATYPE: /)
      expect((await get<ApiBlobData[]>(`${nsBase(m, ns)}/data?limit=1000`)).body.length).to.equal(before)
    })
  })

  describe('reading data', () => {
    it('lists newest first with limit and skip, blob records included', async () => {
      const lns = `list-${run}`
      const a = await request<ApiBlobData>('POST', `${nsBase(m, lns)}/data`, { value: 'a' })
      const b = await uploadBlob(m, lns, Buffer.from('bbb'), { filename: 'b.txt', autometa: true })
      const c = await request<ApiBlobData>('POST', `${nsBase(m, lns)}/data`, { value: 'c' })
      for (const r of [a, b, c]) expect(r.status).to.equal(200)
      const all = await get<ApiBlobData[]>(`${nsBase(m, lns)}/data`)
      expect(all.body.map((d) => d.id)).to.deep.equal([c.body.id, b.body.id, a.body.id])
      expect(all.body[1]).to.deep.equal(b.body)
      expect((await get<ApiBlobData[]>(`${nsBase(m, lns)}/data?limit=2`)).body.map((d) => d.id)).to.deep.equal([c.body.id, b.body.id])
      expect((await get<ApiBlobData[]>(`${nsBase(m, lns)}/data?limit=2&skip=2`)).body.map((d) => d.id)).to.deep.equal([a.body.id])
      expect((await get<ApiBlobData[]>(`${nsBase(m, lns)}/data?skip=3`)).body).to.deep.equal([])
      expect((await get(`${nsBase(m, lns)}/data?limit=x`)).status).to.equal(400)
    })

    it('404 for unknown ids, data of another namespace and data without a blob; 400 for malformed ids', async () => {
      const unknown = '00000000-0000-4000-8000-0000000000ff'
      for (const path of ['', '/value', '/blob']) {
        expect((await get(`${nsBase(m, ns)}/data/${unknown}${path}`)).status, `unknown${path}`).to.equal(404)
        const r = await get<{ error: string }>(`${nsBase(m, ns)}/data/not-a-uuid${path}`)
        expect(r.status, `malformed${path}`).to.equal(400)
        expect(r.body.error).to.match(/^INVALID_ID: /)
      }
      const json = await request<ApiBlobData>('POST', `${nsBase(m, ns)}/data`, { value: 1 })
      const blob = await get<{ error: string }>(`${nsBase(m, ns)}/data/${json.body.id}/blob`)
      expect(blob.status).to.equal(404)
      expect(blob.body.error).to.match(/has no blob/)
      expect((await get(`${nsBase(m, `other-${run}`)}/data/${json.body.id}`)).status).to.equal(404)
    })
  })

  it('streams a 2 GiB upload and download with the node memory flat', async function () {
    this.timeout(180_000)
    const size = 2048 * MiB
    // Warm the upload path so the baseline includes its code and buffers.
    await uploadBlob(m, ns, randomBytes(8 * MiB))
    const baseline = processMemory(pid)
    let peak = baseline.rss
    const sampler = setInterval(() => {
      peak = Math.max(peak, processMemory(pid).rss)
    }, 50)
    try {
      const bytes = patternBytes(size, 20240601)
      const t0 = Date.now()
      const up = await uploadBlob(m, ns, bytes.stream, { filename: 'big.bin', autometa: true })
      const upSeconds = (Date.now() - t0) / 1000
      expect(up.status, JSON.stringify(up.body)).to.equal(200)
      const expected = bytes.digest()
      expect(up.body.blob).to.deep.equal({ hash: expected, size, name: 'big.bin' })
      const valueText = `{"filename":"big.bin","mimetype":"application/octet-stream","size":${size}}`
      expect(up.body.hash).to.equal(expectedDataHash(valueText, expected))
      const uploadPeak = peak

      const t1 = Date.now()
      const down = await downloadBlob(m, ns, up.body.id)
      const downSeconds = (Date.now() - t1) / 1000
      expect(down.status).to.equal(200)
      expect(down.size).to.equal(size)
      expect(down.sha256).to.equal(expected)
      const after = processMemory(pid)
      console.log(
        `      2 GiB: upload ${upSeconds.toFixed(1)} s (${(2048 / upSeconds).toFixed(0)} MiB/s), download ${downSeconds.toFixed(1)} s (${(2048 / downSeconds).toFixed(0)} MiB/s); ` +
          `node RSS ${(baseline.rss / MiB).toFixed(0)} MiB before, peak +${((uploadPeak - baseline.rss) / MiB).toFixed(0)} MiB uploading, +${((peak - baseline.rss) / MiB).toFixed(0)} MiB overall; ` +
          `VmHWM ${(baseline.hwm / MiB).toFixed(0)} -> ${(after.hwm / MiB).toFixed(0)} MiB`,
      )
      expect(peak - baseline.rss, 'node RSS growth').to.be.below(150 * MiB)
    } finally {
      clearInterval(sampler)
    }
  })
})
