import { expect } from 'chai'
import { validate, compileErrors } from '@readme/openapi-parser'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { ApiRouter } from '../../../../../node/api/router.js'
import { API_TAGS } from '../../../../../node/api/route-doc.js'
import { openApiDocument } from '../../../../../node/api/openapi/document.js'
import { SCHEMAS } from '../../../../../node/api/openapi/schemas.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import { MESSAGE_FIELDS } from '../../../../../node/db/query-fields.js'
import { parseHash } from '../../../../../node/core/ids.js'
import type { NodeServices } from '../../../../../node/services.js'
import { freePort } from '../../../../../network/process.js'
import { localCall } from '../../../../support/local-http.js'

type Operation = {
  operationId: string
  summary: string
  tags: string[]
  parameters?: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[]
  requestBody?: { content: Record<string, unknown> }
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>
}
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } }

/**
 * The API description is the router's own table: what a real server (with the test controls on) serves is exactly
 * what the document it serves lists, path for path and method for method, and the document is valid OpenAPI 3.1.
 */
describe('api: the OpenAPI description of the served routes', () => {
  let api: ApiServer
  let port: number
  let doc: Doc
  let text: string
  const logs: string[] = []

  before(async () => {
    port = await freePort()
    const services = { config: { limits: DEFAULT_REQUEST_LIMITS, admin: true } } as unknown as NodeServices
    api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l), adminToken: 'a'.repeat(64) })
    const r = await localCall(port, 'GET', '/api/openapi.json')
    expect(r.status, r.text).to.equal(200)
    text = r.text
    doc = r.json as Doc
  })
  after(async () => {
    await api.close()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  const operations = (): [string, string, Operation][] => Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([m, op]) => [path, m, op] as [string, string, Operation]))

  it('documents every route and method the server serves, and serves every one it documents', function () {
    const served = new Set<string>()
    for (const route of api.routes()) {
      const path = route.pattern.replace(/:([^/]+)/g, '{$1}')
      // HEAD is GET's (the document's description says so): it is served exactly where GET is.
      expect(route.methods.includes('HEAD'), route.pattern).to.equal(route.methods.includes('GET'))
      for (const method of route.methods) if (method !== 'HEAD') served.add(`${method} ${path}`)
    }
    const documented = new Set(operations().map(([path, method]) => `${method.toUpperCase()} ${path}`))
    expect([...documented].filter((d) => !served.has(d)), 'documented, not served').to.deep.equal([])
    expect([...served].filter((s) => !documented.has(s)), 'served, not documented').to.deep.equal([])
    // Both forms of a namespaced route, the spec's unprefixed subscriptions, the controls and the description itself.
    for (const key of ['GET /api/v1/messages', 'GET /api/v1/namespaces/{ns}/messages', 'DELETE /namespaces/{ns}/subscriptions/{id}', 'POST /admin/v1/chain/hold', 'GET /api/swagger.yaml']) {
      expect(documented.has(key), key).to.equal(true)
    }
  })

  it('is a valid OpenAPI 3.1 document (@readme/openapi-parser)', async function () {
    expect(doc.openapi).to.equal('3.1.0')
    // The parser dereferences what it is given: a copy of its own, from the text served.
    const result = await validate(JSON.parse(text) as Parameters<typeof validate>[0])
    expect(result.valid, result.valid ? '' : compileErrors(result)).to.equal(true)
    expect(result.warnings).to.deep.equal([])
  })

  it('has component schemas that are valid JSON Schema 2020-12, with every reference resolving', function () {
    const ajv = new Ajv2020({ strict: false, validateFormats: false })
    ajv.addSchema({ $id: 'doc', components: { schemas: doc.components.schemas } })
    for (const name of Object.keys(SCHEMAS)) expect(() => ajv.getSchema(`doc#/components/schemas/${name}`), name).not.to.throw()
    for (const [, ref] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) expect(SCHEMAS, ref).to.have.property(ref!)
  })

  it("names each operation as FireFly does: its id, and the namespaced form's with the suffix Namespace", function () {
    expect(doc.paths['/api/v1/messages']!.get!.operationId).to.equal('getMsgs')
    expect(doc.paths['/api/v1/namespaces/{ns}/messages']!.get!.operationId).to.equal('getMsgsNamespace')
    expect(doc.paths['/api/v1/namespaces/{ns}/messages/broadcast']!.post!.operationId).to.equal('postNewMessageBroadcastNamespace')
    const ns = doc.paths['/api/v1/namespaces/{ns}/messages/{id}']!.get!.parameters!.slice(0, 2)
    expect(ns.map((p) => [p.name, p.in, p.required])).to.deep.equal([
      ['ns', 'path', true],
      ['id', 'path', true],
    ])
    for (const [path, method, op] of operations()) {
      expect(API_TAGS as readonly string[], `${method} ${path}`).to.include(op.tags[0])
      expect(op.summary, `${method} ${path}`).to.be.a('string').and.not.equal('')
    }
  })

  it("lists a collection's paging and its filter fields from the data layer, and a body's media types", function () {
    const list = doc.paths['/api/v1/messages']!.get!
    const names = list.parameters!.map((p) => p.name)
    expect(names).to.include.members(['limit', 'skip', 'fetchdata', ...Object.keys(MESSAGE_FIELDS)])
    expect(list.parameters!.find((p) => p.name === 'limit')!.schema).to.deep.include({ type: 'integer', minimum: 1, maximum: 1000, default: 25 })
    expect(Object.keys(doc.paths['/api/v1/data']!.post!.requestBody!.content)).to.deep.equal(['application/json', 'multipart/form-data'])
    expect(doc.paths['/api/v1/data/{id}/blob']!.get!.responses['200']!.content).to.have.property('application/octet-stream')
  })

  it('gives every 4xx and 5xx answer the error shape {"error": string}, naming the codes behind each status', function () {
    for (const [path, method, op] of operations()) {
      const statuses = Object.keys(op.responses)
      expect(statuses, `${method} ${path}`).to.include.members(['400', '414', '500', '503'])
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        expect(op.responses[status]!.content!['application/json']!.schema, `${method} ${path} ${status}`).to.deep.equal({ $ref: '#/components/schemas/Error' })
      }
    }
    const one = doc.paths['/api/v1/messages/{id}']!.get!.responses
    expect(one['404']!.description).to.equal('NOT_FOUND')
    expect(one['503']!.description).to.equal('UNAVAILABLE')
    expect(one['400']!.description).to.equal('INVALID_ID, INVALID_FIELD, BAD_REQUEST')
    expect(doc.components.schemas.Error).to.deep.include({ required: ['error'] })
  })

  it('lists INVALID_FIELD under 400 wherever `?hash=` is taken, with the pattern parseHash accepts', function () {
    const taking = operations().filter(([, , op]) => op.parameters?.some((p) => p.in === 'query' && p.name === 'hash' && p.schema.pattern !== undefined))
    expect(taking.map(([, , op]) => op.operationId)).to.include.members(['getMsgByID', 'getMsgTrace', 'getMsgTxn', 'getMsgEvents', 'getMsgData'])
    for (const [path, method, op] of taking) {
      expect(op.responses['400']!.description, `${method} ${path}`).to.contain('INVALID_FIELD')
      const pattern = new RegExp(op.parameters!.find((p) => p.name === 'hash')!.schema.pattern as string)
      for (const ok of ['ab'.repeat(32), '0x' + 'AB'.repeat(32)]) {
        expect(pattern.test(ok), ok).to.equal(true)
        expect(parseHash(ok), ok).to.equal('ab'.repeat(32))
      }
      for (const bad of ['ab'.repeat(31), 'zz'.repeat(32), '0x' + 'ab'.repeat(33)]) {
        expect(pattern.test(bad), bad).to.equal(false)
        expect(() => parseHash(bad), bad).to.throw(/32-byte hex hash/)
      }
    }
  })

  it('refuses two routes with one operationId, rather than describe one of them', function () {
    const r = new ApiRouter({})
    const doc = { summary: 's', tag: 'Status', operationId: 'same', responses: { 204: { description: 'd' } }, errors: [] } as const
    r.get('/a', doc, () => {})
    r.get('/b', doc, () => {})
    expect(() => openApiDocument(r.documented(), '0.0.0')).to.throw(/two routes share the operationId same/)
  })
})

/**
 * What the compiler refuses (the `types` suite runs tsc over this file, so an error that stops being one fails it):
 * a route without its description, and path parameters left undescribed or described where there are none.
 */
export function typeChecks(r: ApiRouter<object>): void {
  const doc = { summary: 's', tag: 'Status', operationId: 'x', responses: {}, errors: [] } as const
  // @ts-expect-error no description
  r.get('/a', () => {})
  // @ts-expect-error `:id` is not described
  r.get('/a/:id', doc, () => {})
  // @ts-expect-error `params` names a parameter the path does not have
  r.get('/a/:id', { ...doc, params: { id: { description: 'i' }, other: { description: 'o' } } }, () => {})
  // @ts-expect-error a path without parameters takes no `params`
  r.get('/a', { ...doc, params: { id: { description: 'i' } } }, () => {})
  // @ts-expect-error the admin routes too
  r.at('post', '/admin/v1/x', () => {})
  r.get('/a/:id/b/:name', { ...doc, params: { id: { description: 'i' }, name: { description: 'n' } } }, () => {})
}
