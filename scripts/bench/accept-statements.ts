/**
 * What accepting broadcasts costs a member's database, per message: one member in this process (its chain and IPFS
 * unreachable, its org registered straight into its database), N broadcasts posted to its API, 20 at a time; the
 * member accepts each (202) and seals them into batches. Prints process CPU per message and, on PostgreSQL, the
 * statements sent to the server and the round trips the event loop waited for.
 *
 * Usage: tsx scripts/bench/accept-statements.ts MESSAGES [POSTGRES_URL]   (the URL's database must be empty)
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DatabaseConfig } from '../../node/config.js'
import { newId, type IdentityId, type MessageId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { PgDatabase } from '../../node/db/pg/pg-database.js'
import { printTally } from './statement-tally.js'
import { openRepositories } from '../../node/db/repos/index.js'
import { startNode } from '../../node/node.js'
import { loneNodeConfig, loneNodeTls } from '../../test/support/lone-node.js'

const [count, url] = process.argv.slice(2)
const messages = Number(count)
if (!Number.isInteger(messages) || messages < 40) {
  console.error('usage: accept-statements.ts MESSAGES (at least 40) [POSTGRES_URL]')
  process.exit(2)
}
const database: DatabaseConfig = url ? { type: 'postgres', url } : { type: 'sqljs' }
const root = await mkdtemp(join(tmpdir(), 'parley-accept-'))
const node = await startNode(await loneNodeConfig(join(root, 'data'), await loneNodeTls(root), { database }), () => {})
try {
  const repos = openRepositories(node.db)
  await node.db.transaction((tx) =>
    repos.identities.insert(tx, { id: newId<IdentityId>(), did: 'did:firefly:org/org0', type: 'org', namespace: 'svc_system', name: 'org0', messages: { claim: newId<MessageId>() }, created: now() }),
  )
  const send = async (i: number): Promise<void> => {
    const res = await fetch(`${node.api}/api/v1/namespaces/default/messages/broadcast`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ header: { topics: [`t${i % 5}`] }, data: [{ value: { i, text: 'a small JSON value' } }] }),
    })
    if (res.status !== 202) throw new Error(`broadcast ${i}: ${res.status} ${await res.text()}`)
  }
  const run = async (from: number, to: number): Promise<void> => {
    let next = from
    await Promise.all(Array.from({ length: 20 }, async () => {
      while (next < to) await send(next++)
    }))
  }
  // A quarter warms up, uncounted.
  const warm = Math.floor(messages / 4)
  await run(0, warm)
  await new Promise((r) => setTimeout(r, 1000))
  const s0 = node.db.stats()
  const tally0 = node.db instanceof PgDatabase ? node.db.statementTally() : []
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await run(warm, messages)
  // Let the last batch be sealed (the batch timeout is 500 ms).
  await new Promise((r) => setTimeout(r, 1000))
  const cpu = process.cpuUsage(cpu0)
  const s = node.db.stats()
  const n = messages - warm
  const per = (x: number): number => Math.round((x / n) * 100) / 100
  console.log(
    JSON.stringify({
      engine: database.type,
      messages: n,
      acceptedPerSecond: Math.round(n / ((performance.now() - t0 - 1000) / 1000)),
      cpuMicrosPerMessage: per(cpu.user + cpu.system),
      commitsPerMessage: per(s.lastSeq - s0.lastSeq),
      ...(s.statements !== undefined ? { statementsPerMessage: per(s.statements - s0.statements!), roundTripsPerMessage: per(s.roundTrips! - s0.roundTrips!) } : {}),
    }),
  )
  if (node.db instanceof PgDatabase) printTally(tally0, node.db.statementTally(), n)
} finally {
  await node.stop()
  await rm(root, { recursive: true, force: true })
}
