import { expect } from 'chai'
import http from 'node:http'
import { parse } from 'yaml'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import type { NodeServices } from '../../../../../node/services.js'
import { VERSION } from '../../../../../node/version.js'
import { freePort } from '../../../../../network/process.js'

interface Reply {
  status: number
  type: string | undefined
  text: string
}

function get(port: number, path: string, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, agent: false, method, path }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], text: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** The API description at Parley's path and FireFly's two, over a real server: one document, as JSON and as YAML. */
describe('api: serving the OpenAPI description', () => {
  let api: ApiServer
  let port: number

  before(async () => {
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services: { config: { limits: DEFAULT_REQUEST_LIMITS } } as unknown as NodeServices, log: () => {} })
  })
  after(() => api.close())

  it('answers /api/openapi.json and /api/swagger.json with the same JSON, and /api/swagger.yaml with it as YAML', async () => {
    const json = await get(port, '/api/openapi.json')
    expect([json.status, json.type]).to.deep.equal([200, 'application/json; charset=utf-8'])
    const doc = JSON.parse(json.text) as { openapi: string; info: { version: string } }
    expect(doc.openapi).to.equal('3.1.0')
    expect(doc.info.version).to.equal(VERSION)

    const swagger = await get(port, '/api/swagger.json')
    expect([swagger.status, swagger.type, swagger.text]).to.deep.equal([200, 'application/json; charset=utf-8', json.text])

    const yaml = await get(port, '/api/swagger.yaml')
    expect([yaml.status, yaml.type]).to.deep.equal([200, 'application/yaml; charset=utf-8'])
    expect(yaml.text).not.to.match(/[&*]a\d+\b/, 'no YAML anchors or aliases')
    expect(parse(yaml.text)).to.deep.equal(doc)
  })

  it('answers HEAD without a body, and another method with 405', async () => {
    const head = await get(port, '/api/openapi.json', 'HEAD')
    expect([head.status, head.type, head.text]).to.deep.equal([200, 'application/json; charset=utf-8', ''])
    const post = await get(port, '/api/swagger.yaml', 'POST')
    expect(post.status).to.equal(405)
    expect(JSON.parse(post.text)).to.have.property('error').that.matches(/^METHOD_NOT_ALLOWED: /)
  })

  it('leaves out the test controls where the member serves none', async () => {
    const doc = JSON.parse((await get(port, '/api/openapi.json')).text) as { paths: Record<string, unknown> }
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/admin/'))).to.deep.equal([])
    expect(Object.keys(doc.paths)).to.include('/api/v1/status')
  })
})
