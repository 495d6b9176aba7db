import { expect } from 'chai'
import { join } from 'node:path'
import { localCall } from '../../../../support/local-http.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../../support/repos.js'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import type { NodeServices } from '../../../../../node/services.js'
import { freePort } from '../../../../../network/process.js'
import { Namespaces } from '../../../../../node/namespace/namespaces.js'
import { newId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'

const STARTED = '2024-01-01T00:00:00Z' as Timestamp

describe('namespaces: API', () => {
  const temp = new TempDirs()
  let r: Repos
  let api: ApiServer
  let port: number
  const logs: string[] = []

  before(async () => {
    r = await openRepos(join(await temp.make('parley-namespaces-api-'), 'db'))
    await r.db.transaction((tx) => r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'ns1', reference: newId() }], '2024-01-01T00:00:05Z' as Timestamp))
    const services = { config: { limits: DEFAULT_REQUEST_LIMITS }, namespaces: new Namespaces({ repo: r.namespaces, started: STARTED }) } as unknown as NodeServices
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
  })
  after(async () => {
    await api.close()
    await r.db.close()
    await temp.cleanup()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  it("GET /api/v1/namespaces lists FireFly's Namespace JSON, by name", async () => {
    const res = await localCall(port, 'GET', '/api/v1/namespaces')
    expect(res.status).to.equal(200)
    expect(res.text).to.equal(
      `[{"name":"default","networkName":"default","description":"","created":"${STARTED}"},{"name":"ns1","networkName":"ns1","description":"","created":"2024-01-01T00:00:05Z"}]`,
    )
  })

  it('GET /api/v1/namespaces/{ns} answers any well-formed name and refuses a malformed one', async () => {
    expect((await localCall(port, 'GET', '/api/v1/namespaces/ns1')).json).to.deep.equal({ name: 'ns1', networkName: 'ns1', description: '', created: '2024-01-01T00:00:05Z' })
    expect((await localCall(port, 'GET', '/api/v1/namespaces/fresh/')).json).to.deep.include({ name: 'fresh', created: STARTED })
    const bad = await localCall(port, 'GET', '/api/v1/namespaces/-bad-')
    expect(bad.status).to.equal(400)
    expect(bad.json).to.have.property('error')
  })
})
