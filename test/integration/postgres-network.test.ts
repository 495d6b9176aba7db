import { expect } from 'chai'
import { readPids } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { isAlive } from '../../network/process.js'
import { POSTGRES_PROCESS } from '../../network/postgres/cluster.js'
import { withServer } from '../../network/postgres/databases.js'
import { testNetwork } from '../support/network.js'
import { processesOfGroup } from '../support/process-group.js'
import { nsBase, request, runId, send, waitConfirmedAll, type ApiMessage } from '../support/api.js'

/**
 * The end-to-end proof of `startNetwork({ database: 'postgres' })`: the network runs its own PostgreSQL, each member
 * keeps its state in a database of its own there, messages go out and are confirmed as on sql.js, and the stop
 * leaves no process of the server. What the lifecycle decides alone (initdb once, resume, stale pid, refusals) is
 * tested at its modules (test/unit/network/startup/postgres.test.ts, database.test.ts).
 */
describe('a 2-member network on its own PostgreSQL', function () {
  this.timeout(180_000)
  let t: Awaited<ReturnType<typeof testNetwork>> | undefined
  const run = runId()
  const ns = `pg-${run}`

  before(async function () {
    t = await testNetwork('pg-network', { members: 2, database: 'postgres' })
  })
  after(async function () {
    const alive = await t?.stop()
    expect(alive ?? [], 'processes left alive after the network stopped').to.deep.equal([])
  })

  it('sends a broadcast and a private message, each member holding them in its own database, and verify passes', async function () {
    const { net } = t!
    const [org0, org1] = net.description.members
    expect(net.description.database).to.deep.include({ engine: 'postgres', managed: true })
    const b = await send(org0!, ns, `b-${run}`, { hello: 'everyone' })
    const p = await request<ApiMessage>('POST', `${nsBase(org0!, ns)}/messages/private`, {
      header: { topics: [`p-${run}`] },
      group: { members: [{ identity: org1!.org }] },
      data: [{ value: { hello: 'org1' } }],
    })
    expect(p.status, JSON.stringify(p.body)).to.equal(202)
    for (const m of [org0!, org1!]) await waitConfirmedAll(m, ns, [b.header.id, p.body.header.id], 90_000)

    for (const m of [org0!, org1!]) {
      const url = net.controls.databaseUrl(m.org)!
      expect(new URL(url).pathname).to.equal(`/parley_${m.org}`)
      const ids = await withServer(url, async (c) => (await c.query<{ id: string }>('SELECT id FROM messages WHERE id = ANY($1::text[])', [[b.header.id, p.body.header.id]])).rows.map((r) => r.id))
      expect(ids.sort(), `${m.org}'s database`).to.deep.equal([b.header.id, p.body.header.id].sort())
    }
    const report = await net.verify({ namespaces: [ns] })
    expect(report.ok, JSON.stringify(report)).to.equal(true)
  })

  it('stops with the network: no process of the server is left', async function () {
    const { net, dir } = t!
    const pid = readPids(layout(dir).pidsJson).processes.find((p) => p.name === POSTGRES_PROCESS)!.pid
    await net.stop()
    expect(isAlive(pid)).to.equal(false)
    expect(processesOfGroup(pid)).to.deep.equal([])
  })
})
