import { expect } from 'chai'
import http from 'node:http'
import { sharedNetwork } from '../support/shared-network.js'
import { get, messageReaching, nsBase, request, runId, send, type ApiMessage } from '../support/api.js'
import { EventSocket, closeEventSockets, createSubscription, rootWs } from '../support/events.js'
import { adminHeaders } from '../../network/admin-auth.js'
import { layout } from '../../network/layout.js'

const EVIL = 'http://evil.example'

/**
 * What a web page open in the developer's browser can send to a member on loopback, against a real member of the
 * shared network: each attack is refused before it changes anything, while programs without an Origin (this
 * suite, the SDK) and the network's own controls (CLI, `startNetwork()`'s handle) work as before.
 */
describe('hostile web pages against a real member', function () {
  this.timeout(120_000)
  const t = sharedNetwork()
  const { members } = t
  const ns = `pages-${runId()}`
  afterEach(() => closeEventSockets())

  /** One request as Node's http client writes it (fetch will not send a Host of our choosing). */
  function raw(url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; error: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method, headers, agent: false }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, error: (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { error?: string }).error ?? '' }))
      })
      req.on('error', reject)
      req.end(body)
    })
  }
  const topicMessages = async (topic: string): Promise<number> => (await get<ApiMessage[]>(`${nsBase(members[0]!, ns)}/messages?topics=${topic}`)).body.length

  it('refuses a cross-origin text/plain broadcast (sent by a page without a preflight): 403, nothing stored', async () => {
    const org0 = members[0]!
    const body = JSON.stringify({ header: { topics: ['page-attack'] }, data: [{ value: 'from a page' }] })
    const r = await raw(`${nsBase(org0, ns)}/messages/broadcast`, 'POST', { origin: EVIL, 'content-type': 'text/plain;charset=UTF-8' }, body)
    expect(r.status).to.equal(403)
    expect(r.error).to.match(/^FORBIDDEN: a page of origin "http:\/\/evil\.example" may not POST here/)
    // The same without an Origin is a program's mistake: text/plain is not JSON.
    expect((await raw(`${nsBase(org0, ns)}/messages/broadcast`, 'POST', { 'content-type': 'text/plain' }, body)).status).to.equal(415)
    expect(await topicMessages('page-attack')).to.equal(0)
  })

  it('refuses a cross-origin POST to the test controls (403), and any without the admin token (401): the member keeps reading the chain', async () => {
    const org1 = members[1]!
    expect((await raw(`${org1.api}/admin/v1/chain/hold`, 'POST', { origin: EVIL, 'content-type': 'text/plain' }, '{}')).status).to.equal(403)
    const noToken = await raw(`${org1.api}/admin/v1/chain/hold`, 'POST', {})
    expect(noToken.status).to.equal(401)
    expect(noToken.error).to.match(/^UNAUTHORIZED: .*admin-token/)
    expect((await t.net.controlsOf(org1.org)).chain.held).to.equal(false)
  })

  it('refuses a request naming another host (DNS rebinding) with 421, reads included', async () => {
    const org0 = members[0]!
    const port = new URL(org0.api).port
    for (const method of ['GET', 'POST']) {
      const r = await raw(`${nsBase(org0, ns)}/messages`, method, { host: `evil.example:${port}`, 'content-type': 'application/json' }, method === 'POST' ? '{}' : undefined)
      expect(r.status, method).to.equal(421)
      expect(r.error).to.match(/api\.allowedHosts/)
    }
  })

  it('refuses a WebSocket from a foreign origin attaching to a durable subscription; the application still gets its events', async () => {
    const org0 = members[0]!
    await createSubscription(org0, ns, { name: 'orders-app', options: { firstEvent: 'oldest' } })
    const sent = await send(org0, ns, 'orders', { n: 1 })
    await messageReaching(org0, ns, sent.header.id, ['confirmed'])
    const url = rootWs(org0, `namespace=${ns}&name=orders-app`)
    const refused = await EventSocket.open(url, { ack: true, origin: EVIL }).catch((e: Error & { status?: number }) => e)
    expect(refused).to.be.instanceOf(Error)
    expect((refused as { status?: number }).status).to.equal(403)
    // The application (no Origin, as the SDK) gets the event the page would have acknowledged.
    const app = await EventSocket.open(url, { ack: true })
    expect((await app.eventFor(sent.header.id)).type).to.equal('message_confirmed')
    // The member's own pages (the console) may open one.
    const own = await EventSocket.open(rootWs(org0, `namespace=${ns}&ephemeral&autoack`), { origin: new URL(org0.api).origin })
    own.close()
  })

  it('leaves the network\'s own controls working: the handle holds and releases a member\'s chain reading with its token', async () => {
    const org1 = members[1]!
    expect((await t.net.holdReading(org1.org, 'chain')).chain.held).to.equal(true)
    expect((await t.net.releaseReading(org1.org, 'chain')).chain.held).to.equal(false)
    const headers = adminHeaders(layout(t.dir), org1.org)
    expect(headers.authorization).to.match(/^Bearer [0-9a-f]{64}$/)
    expect((await request(`GET`, `${org1.api}/admin/v1/controls`, undefined, headers)).status).to.equal(200)
  })
})
