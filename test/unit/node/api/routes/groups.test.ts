import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import fc from 'fast-check'
import { join } from 'node:path'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import type { NodeServices } from '../../../../../node/services.js'
import { freePort } from '../../../../../network/process.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../../support/repos.js'
import { sealGroup } from '../../../../../node/identity/group-resolver.js'
import type { IdentityId, MessageId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import type { Group, GroupMember } from '../../../../../node/model/index.js'

const NODE = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}` as IdentityId
const org = (n: number) => `did:firefly:org/org${n}`

function group(namespace: string, name: string, members: GroupMember[], created: string, message?: string): Group {
  const sealed = sealGroup(namespace, name, members)
  return { hash: sealed.hash, namespace, name, members: sealed.members, created: created as Timestamp, ...(message ? { message: message as MessageId } : {}) }
}

/** The group routes over real HTTP, through the real server, over a real (temporary) database. */
describe('groups: API', () => {
  const temp = new TempDirs()
  let repos: Repos
  let api: ApiServer
  let port: number
  const logs: string[] = []

  const MSG = '6a9d1e4c-54a1-4bc8-9a34-1b2c3d4e5f60'
  const g1 = group('default', 'one', [{ identity: org(1), node: NODE(1) }, { identity: org(0), node: NODE(0) }], '2024-01-01T00:00:01Z', MSG)
  const g2 = group('default', '', [{ identity: org(0), node: NODE(0) }, { identity: org(2), node: NODE(2) }], '2024-01-01T00:00:02.25Z')
  const other = group('ns1', 'one', [{ identity: org(1), node: NODE(1) }, { identity: org(0), node: NODE(0) }], '2024-01-01T00:00:03Z')

  before(async () => {
    repos = await openRepos(join(await temp.make('parley-groups-api-'), 'db'))
    await repos.db.transaction((tx) => [g1, g2, other].forEach((g) => repos.groups.insert(tx, g)))
    const services = { config: { limits: DEFAULT_REQUEST_LIMITS }, query: { groups: repos.groups } } as unknown as NodeServices
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
  })
  after(async () => {
    await api.close()
    await repos.db.close()
    await temp.cleanup()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  const call = (path: string, method = 'GET') => localCall(port, method, path)
  const names = async (query: string, ns = 'default') => {
    const r = await call(`/api/v1/namespaces/${ns}/groups${query}`)
    expect(r.status, r.text).to.equal(200)
    return (r.json as { name: string }[]).map((g) => g.name)
  }

  it('GET groups/{hash} answers FireFly\'s Group JSON, field for field and in its order', async () => {
    const r = await call(`/api/v1/namespaces/default/groups/${g1.hash}`)
    expect(r.status).to.equal(200)
    expect(r.text).to.equal(
      `{"namespace":"default","name":"one","members":[{"identity":"did:firefly:org/org0","node":"${NODE(0)}"},{"identity":"did:firefly:org/org1","node":"${NODE(1)}"}],` +
        `"localNamespace":"default","message":"${MSG}","hash":"${g1.hash}","created":"2024-01-01T00:00:01Z"}`,
    )
    // No groupinit recorded: no message field; an empty name is still there.
    expect(Object.keys((await call(`/api/v1/groups/${g2.hash}`)).json as object)).to.deep.equal(['namespace', 'name', 'members', 'localNamespace', 'hash', 'created'])
  })

  it('a hash in any case, with 0x, names the group; the default namespace is also at /api/v1', async () => {
    for (const path of [`/api/v1/namespaces/default/groups/0x${g1.hash.toUpperCase()}`, `/api/v1/groups/${g1.hash}`]) {
      const r = await call(path)
      expect(r.status, path).to.equal(200)
      expect((r.json as { hash: string }).hash).to.equal(g1.hash)
    }
  })

  it('a group unknown here, or of another namespace, is a 404; a malformed hash a 400', async () => {
    for (const path of [`/api/v1/namespaces/default/groups/${'ab'.repeat(32)}`, `/api/v1/namespaces/default/groups/${other.hash}`, `/api/v1/namespaces/ns1/groups/${g1.hash}`]) {
      const r = await call(path)
      expect(r.status, path).to.equal(404)
      expect((r.json as { error: string }).error).to.match(/^NOT_FOUND: group [0-9a-f]{64} not found in namespace (default|ns1) on this member/)
    }
    for (const bad of ['abc', 'zz'.repeat(32), 'ab'.repeat(33), '%00', g1.hash + '0']) {
      const r = await call(`/api/v1/namespaces/default/groups/${bad}`)
      expect(r.status, bad).to.equal(400)
      expect((r.json as { error: string }).error).to.match(/^INVALID_FIELD: group hash is not a 32-byte hex hash/)
    }
    expect((await call(`/api/v1/namespaces/bad%20ns/groups/${g1.hash}`)).status).to.equal(400)
  })

  it('GET groups lists the namespace\'s groups newest first, paged', async () => {
    const r = await call('/api/v1/namespaces/default/groups')
    expect(r.status).to.equal(200)
    expect((r.json as { hash: string }[]).map((g) => g.hash)).to.deep.equal([g2.hash, g1.hash])
    expect(await names('', 'ns1')).to.deep.equal(['one'])
    expect(await names('', 'ns2')).to.deep.equal([])
    expect(await names('?limit=1&skip=1')).to.deep.equal(['one'])
    expect((await call('/api/v1/groups')).json).to.deep.equal(r.json)
  })

  it('filters as FireFly\'s query syntax: hash, message, name, members, created', async () => {
    expect(await names(`?hash=${g2.hash}`)).to.deep.equal([''])
    expect(await names(`?message=${MSG}`)).to.deep.equal(['one'])
    expect(await names('?name=one')).to.deep.equal(['one'])
    expect(await names('?name=!one')).to.deep.equal([''])
    expect(await names(`?members=@${encodeURIComponent(`"${org(2)}"`)}`)).to.deep.equal([''])
    expect(await names(`?members=@${NODE(1)}`)).to.deep.equal(['one'])
    expect(await names('?created=>2024-01-01T00:00:02Z')).to.deep.equal([''])
    expect(await names('?created=<=2024-01-01T00:00:02.25Z&name=:ONE')).to.deep.equal(['one'])
  })

  it('refuses an unknown filter field, a bad time, bad paging (400, JSON body)', async () => {
    for (const [query, code] of [
      ['?ledger=x', 'INVALID_FILTER'],
      ['?created=yesterday', 'INVALID_FILTER'],
      ['?limit=0', 'INVALID_FIELD'],
      ['?skip=-1', 'INVALID_FIELD'],
      ['?limit=1&limit=2', 'INVALID_FIELD'],
    ] as const) {
      const r = await call(`/api/v1/namespaces/default/groups${query}`)
      expect(r.status, query).to.equal(400)
      expect((r.json as { error: string }).error, query).to.match(new RegExp(`^${code}: `))
    }
  })

  it('is read-only: other methods are 405 with Allow', async () => {
    for (const [method, path] of [
      ['POST', '/api/v1/namespaces/default/groups'],
      ['DELETE', `/api/v1/namespaces/default/groups/${g1.hash}`],
      ['PUT', `/api/v1/groups/${g1.hash}`],
    ] as const) {
      const r = await call(path, method)
      expect(r.status, `${method} ${path}`).to.equal(405)
      expect(r.allow).to.equal('HEAD, GET, OPTIONS')
    }
  })

  it('whatever the path segment and query, a 2xx or a JSON 4xx (property, fixed seed)', async () => {
    const segment = fc.oneof(
      fc.constantFrom(g1.hash, other.hash, `0x${g2.hash}`, '', '..', '%2e%2e', '%00', '%zz', '__proto__', 'a'.repeat(5000)),
      fc.string({ unit: 'binary', maxLength: 80 }).map((s) => encode(s)),
      fc.stringMatching(/^[0-9a-fA-Fx]{60,70}$/),
    )
    const field = fc.constantFrom('hash', 'message', 'name', 'members', 'created', 'limit', 'skip', 'sort', 'count', 'Hash', 'MEMBERS', '__proto__', 'constructor', 'ledger')
    const value = fc.oneof(
      fc.constantFrom('', '!', ':', '@', '>', '<=', '^', '$', '!:@x', '1', '-1', '99999999999999999999', '2024-01-01T00:00:00Z', '2024-02-30', '%', '%25', '"', 'did:firefly:org/org1'),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => encode(s)),
    )
    const query = fc.array(fc.tuple(field, value).map(([f, v]) => `${f}=${v}`), { maxLength: 5 }).map((ps) => (ps.length ? `?${ps.join('&')}` : ''))
    const path = fc.oneof(
      query.map((q) => `/api/v1/namespaces/default/groups${q}`),
      fc.tuple(segment, query).map(([s, q]) => `/api/v1/namespaces/default/groups/${s}${q}`),
      fc.tuple(segment, query).map(([s, q]) => `/api/v1/groups/${s}${q}`),
    )
    await fc.assert(
      fc.asyncProperty(path, async (p) => {
        const r = await call(p)
        expect(r.status, p).to.be.within(200, 499)
        if (r.status >= 400) expect((r.json as { error?: unknown } | undefined)?.error, `${p} -> ${r.text}`).to.be.a('string')
      }),
      { seed: 20240611, numRuns: 200 },
    )
  })
})

/** Percent-encodes a string's UTF-8 bytes (lone surrogates included), so any string can travel in a URL. */
function encode(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('')
}
