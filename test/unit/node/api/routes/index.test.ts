import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { ApiRouter } from '../../../../../node/api/router.js'
import { API_ROUTES } from '../../../../../node/api/routes/index.js'
import type { NodeServices } from '../../../../../node/services.js'

/** FireFly's messaging routes as its swagger.yaml lists them (provenance in the file). */
interface FireFlyRoutes {
  source: { repository: string; commit: string; file: string }
  routes: { method: string; path: string }[]
}

const fixture = JSON.parse(readFileSync(new URL('../../../../fixtures/firefly-routes.json', import.meta.url), 'utf8')) as FireFlyRoutes
const apiDoc = readFileSync(new URL('../../../../../docs/api.md', import.meta.url), 'utf8')

/** A path with its parameters blanked and in lower case: `/messages/{msgid}` and `/messages/:id` are one route. */
const shape = (path: string): string => path.replace(/\{[^}]+\}|:[A-Za-z]+/g, '{}').toLowerCase()

/** FireFly's path as `/api/v1` serves it: its `/namespaces/{ns}/...` form and its form for the default namespace. */
const served = (() => {
  const router = new ApiRouter({} as NodeServices)
  for (const register of API_ROUTES) register(router)
  const out = new Set<string>()
  for (const r of router.list()) for (const m of r.methods) out.add(`${m} ${shape(r.pattern)}`)
  return out
})()

/** The rows of the table of routes left out, under "## FireFly's routes" in docs/api.md: `| METHOD | /path | why |`. */
function leftOut(): Map<string, string> {
  const section = apiDoc.split(/^## /m).find((s) => s.startsWith("FireFly's routes"))
  if (!section) throw new Error("docs/api.md has no section \"## FireFly's routes\"")
  const rows = new Map<string, string>()
  for (const line of section.split('\n')) {
    const cells = /^\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|\s*`?([^|`]+?)`?\s*\|\s*(.*?)\s*\|\s*$/.exec(line)
    if (cells) rows.set(`${cells[1]} ${shape(cells[2]!)}`, cells[3]!)
  }
  return rows
}

/** FireFly's path in the short form the docs table uses: without its `/namespaces/{ns}` prefix. */
const short = (path: string): string => (path.startsWith('/namespaces/{ns}/') ? path.slice('/namespaces/{ns}'.length) : path)

describe("api routes: FireFly's messaging routes, route for route", () => {
  it(`the fixture names its source (FireFly at ${fixture.source.commit.slice(0, 12)})`, () => {
    expect(fixture.source.repository).to.equal('https://github.com/hyperledger/firefly')
    expect(fixture.source.commit).to.match(/^[0-9a-f]{40}$/)
    expect(fixture.routes.length).to.be.greaterThan(100)
  })

  it('every FireFly route is served by the route table or left out with a reason in docs/api.md', () => {
    const documented = leftOut()
    const missing = fixture.routes
      .filter((r) => !served.has(`${r.method} ${shape(`/api/v1${r.path}`)}`))
      .filter((r) => !(documented.get(`${r.method} ${shape(short(r.path))}`) ?? '').trim())
      .map((r) => `${r.method} ${r.path}`)
    expect(missing, 'neither served nor listed as left out').to.deep.equal([])
  })

  it('the table lists only routes that are FireFly\'s and that the node does not serve', () => {
    const fireFly = new Set(fixture.routes.map((r) => `${r.method} ${shape(short(r.path))}`))
    for (const key of leftOut().keys()) {
      expect(fireFly.has(key), `${key} is not one of FireFly's routes`).to.equal(true)
      const [method, path] = key.split(' ') as [string, string]
      expect(served.has(`${method} ${shape(`/api/v1/namespaces/{ns}${path}`)}`) || served.has(`${method} ${shape(`/api/v1${path}`)}`), `${key} is served, yet listed as left out`).to.equal(false)
    }
  })

  it('serves the routes a messaging client called in vain: namespaces, identities, verifiers, transactions, operations, publish, delete', () => {
    for (const route of [
      'GET /api/v1/namespaces',
      'GET /api/v1/namespaces/{ns}',
      'GET /api/v1/namespaces/{ns}/identities',
      'GET /api/v1/namespaces/{ns}/identities/{iid}',
      'GET /api/v1/namespaces/{ns}/identities/{iid}/verifiers',
      'GET /api/v1/namespaces/{ns}/verifiers',
      'GET /api/v1/namespaces/{ns}/verifiers/{hash}',
      'POST /api/v1/namespaces/{ns}/verifiers/resolve',
      'GET /api/v1/namespaces/{ns}/transactions',
      'GET /api/v1/namespaces/{ns}/transactions/{txnid}',
      'GET /api/v1/namespaces/{ns}/operations',
      'GET /api/v1/namespaces/{ns}/operations/{opid}',
      'POST /api/v1/namespaces/{ns}/data/{dataid}/value/publish',
      'POST /api/v1/namespaces/{ns}/data/{dataid}/blob/publish',
      'DELETE /api/v1/namespaces/{ns}/data/{dataid}',
    ]) {
      const [method, path] = route.split(' ') as [string, string]
      expect(served.has(`${method} ${shape(path)}`), route).to.equal(true)
    }
  })
})
