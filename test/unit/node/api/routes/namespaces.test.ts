import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import { Namespaces } from '../../../../../node/namespace/namespaces.js'
import { newId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'

const STARTED = '2024-01-01T00:00:00Z' as Timestamp

describe('namespaces: API', () => {
  const t = apiSuite('parley-namespaces-api-', async (r) => {
    await r.db.transaction((tx) => r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'ns1', reference: newId() }], '2024-01-01T00:00:05Z' as Timestamp))
    return { namespaces: new Namespaces({ repo: r.namespaces, started: STARTED }) }
  })
  const call = (path: string) => localCall(t.port, 'GET', path)

  it("GET /api/v1/namespaces lists FireFly's Namespace JSON, by name", async () => {
    const res = await call('/api/v1/namespaces')
    expect(res.status).to.equal(200)
    expect(res.text).to.equal(
      `[{"name":"default","networkName":"default","description":"","created":"${STARTED}"},{"name":"ns1","networkName":"ns1","description":"","created":"2024-01-01T00:00:05Z"}]`,
    )
  })

  it('GET /api/v1/namespaces/{ns} answers any well-formed name and refuses a malformed one', async () => {
    expect((await call('/api/v1/namespaces/ns1')).json).to.deep.equal({ name: 'ns1', networkName: 'ns1', description: '', created: '2024-01-01T00:00:05Z' })
    expect((await call('/api/v1/namespaces/fresh/')).json).to.deep.include({ name: 'fresh', created: STARTED })
    const bad = await call('/api/v1/namespaces/-bad-')
    expect(bad.status).to.equal(400)
    expect(bad.json).to.have.property('error')
  })
})
