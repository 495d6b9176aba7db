import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import type { NodeConfigFile } from '../../node/config.js'
import { readDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { networkCli, suiteNetwork } from '../support/network.js'
import { get, nsBase, request, runId, send, waitConfirmedAll, type ApiMessage } from '../support/api.js'
import { testDatabase } from '../support/postgres.js'

/**
 * Issue 32 item 8, end to end: a running 2-member network on the default engine, one member moved to PostgreSQL by
 * `npm run network -- move-db` while the other runs on; its history stays readable, it goes on confirming in the
 * chain's order, and verify agrees with the chain. The copy's own cases (both directions, refusals) are unit tests.
 */
describe('move-db: a member of a running network moves from sql.js to PostgreSQL and keeps its history', function () {
  this.timeout(300_000)
  const t = suiteNetwork('move-db', { members: 2 })
  const { members } = t
  const ns = `mv-${runId()}`
  let drop: (() => Promise<void>) | undefined
  after(async () => {
    await drop?.()
  })

  const cli = (args: string[]): ReturnType<typeof networkCli> => networkCli(t.dir, args)

  it('copies org1, restarts it on PostgreSQL, and the network confirms and verifies as before', async () => {
    const [org0, org1] = [members[0]!, members[1]!]
    const before: string[] = []
    for (let i = 0; i < 4; i++) before.push((await send(i % 2 ? org1 : org0, ns, `topic-${i % 2}`, { before: i })).header.id)
    const priv = await request<ApiMessage>('POST', `${nsBase(org0, ns)}/messages/private`, { header: { topics: ['p'] }, group: { members: [{ identity: org1.org }] }, data: [{ value: 'private before' }] })
    expect(priv.status, JSON.stringify(priv.body)).to.equal(202)
    before.push(priv.body.header.id)
    for (const m of [org0, org1]) await waitConfirmedAll(m, ns, before)

    const target = await testDatabase({ prefix: 'movenet', empty: true })
    drop = target.drop
    const moved = await cli(['move-db', org1.org, '--to', 'postgres', '--database-url', target.url])
    expect(moved.code, moved.err + moved.out).to.equal(0)
    expect(moved.out).to.match(/org1 moved from sql\.js to PostgreSQL: \d+ tables, \d+ rows, each checked/)
    expect(moved.out).to.match(/previous state is kept, untouched, at .*members\/org1\/data\/db\.before-move-\d{8}T\d{6}Z/)

    const L = layout(t.dir)
    const cfg = JSON.parse(readFileSync(L.member(org1.org).config, 'utf8')) as NodeConfigFile
    expect(cfg.database).to.deep.equal({ type: 'postgres', url: target.url })
    expect(readDescription(L.networkJson)!.members.find((m) => m.org === org1.org)!.database).to.equal(target.url.replace(/:[^:@/]*@/, '@'))
    const status = await get<{ database: { engine: string; healthy: boolean } }>(`${org1.api}/api/v1/status`)
    expect(status.body.database).to.include({ engine: 'postgres', healthy: true })
    for (const id of before) {
      const r = await get<ApiMessage>(`${nsBase(org1, ns)}/messages/${id}`)
      expect(r.status, id).to.equal(200)
      expect(r.body.state).to.equal('confirmed')
    }

    const after: string[] = []
    for (let i = 0; i < 4; i++) after.push((await send(i % 2 ? org1 : org0, ns, `topic-${i % 2}`, { after: i })).header.id)
    for (const m of [org0, org1]) await waitConfirmedAll(m, ns, [...before, ...after])
    const report = await t.net.verify({ namespaces: [ns] })
    expect(report.ok, JSON.stringify(report.differences, null, 2)).to.equal(true)

    const again = await cli(['move-db', org1.org, '--to', 'postgres', '--database-url', target.url])
    expect(again.code).to.equal(1)
    expect(again.err).to.contain('org1 is already on PostgreSQL')
  })
})
