import { expect } from 'chai'
import http from 'node:http'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import { isJsonMediaType } from '../../../../node/api/media-type.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import type { NodeServices } from '../../../../node/services.js'
import { freePort } from '../../../../network/process.js'

/**
 * JSON routes take JSON only as JSON, over real HTTP through the data route: text/plain, forms and untyped bodies
 * (what a page may POST without a preflight) are 415 and reach no handler; multipart still reaches the upload. The
 * stand-in uploader answers 409 "reached" for a value and "blob" for an upload.
 */
describe('JSON bodies only as application/json', () => {
  let api: ApiServer
  let port: number
  const reached: string[] = []
  const DATA = '/api/v1/namespaces/default/data'

  before(async () => {
    const uploader = {
      uploadValue: (): never => {
        reached.push('value')
        throw new ParleyError('CONFLICT', 'reached')
      },
      uploadBlob: (): never => {
        reached.push('blob')
        throw new ParleyError('CONFLICT', 'blob')
      },
    }
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services: { config: { limits: DEFAULT_REQUEST_LIMITS }, uploader } as unknown as NodeServices, log: () => {} })
  })
  after(() => api.close())
  beforeEach(() => (reached.length = 0))

  function post(headers: Record<string, string>, body: string): Promise<{ status: number; error: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: DATA, headers, agent: false }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, error: (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error: string }).error }))
      })
      req.on('error', reject)
      req.end(body)
    })
  }
  const value = JSON.stringify({ value: { a: 1 } })

  it('refuses text/plain, forms, other types, other charsets and an untyped body with 415, reaching no handler', async () => {
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'application/xml', 'application/jsonx', 'application/json; charset=latin1', undefined]) {
      const r = await post(type === undefined ? {} : { 'content-type': type }, value)
      expect(r.status, String(type)).to.equal(415)
      expect(r.error).to.match(/^UNSUPPORTED_MEDIA_TYPE: /)
    }
    expect(reached).to.deep.equal([])
  })

  it('takes application/json with or without a UTF-8 charset, and +json types', async () => {
    for (const type of ['application/json', 'Application/JSON; charset=utf-8', 'application/json;charset="UTF-8"', 'application/merge-patch+json']) {
      expect(await post({ 'content-type': type }, value), type).to.deep.equal({ status: 409, error: 'CONFLICT: reached' })
    }
    expect(reached).to.deep.equal(['value', 'value', 'value', 'value'])
  })

  it('still takes a multipart upload where uploads are taken, and names an empty untyped body as empty', async () => {
    const boundary = 'xyz'
    const form = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`
    const r = await post({ 'content-type': `multipart/form-data; boundary=${boundary}` }, form)
    expect(reached).to.deep.equal(['blob'])
    expect(r.status).to.equal(409)
    expect((await post({}, '')).error).to.match(/^INVALID_JSON: the request body is empty/)
  })

  it('knows JSON media types', () => {
    expect(['application/json', 'application/problem+json'].map(isJsonMediaType)).to.deep.equal([true, true])
    expect(['text/json', 'application/json-seq', '+json', 'text/plain'].map(isJsonMediaType)).to.deep.equal([false, false, false, false])
  })
})
