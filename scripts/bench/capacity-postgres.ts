/**
 * The capacity run on PostgreSQL (`npm run bench -- --only capacity --database postgres`): one member holding millions
 * of messages, which the API would take hours to send on this machine, so a bulk loader writes the history straight
 * into the member's database, as server-side `INSERT ... SELECT` of copies of real rows: the messages, their data,
 * batches, pins and message_confirmed events a few thousand real broadcasts left there, each copy with its own ids
 * (derived from the original's and the copy's number), a hundred history topics, linked as the originals are (an
 * event names its copied message and transaction, a message its copied batch and transaction, a pin its copied batch
 * and event: a transaction id shared by a hundred copies would make every event's enrichment read them all).
 *
 * Measured through the member's API on the nearly empty database and after each tenth of the load (the member runs
 * throughout and serves them): a topic's latest 50 messages, a message by id, and a subscription replaying from
 * `oldest` (the first event delivered on a new socket). Its RSS after each step, fitted past the first step
 * (warm-up), gives MiB per 100,000 messages held.
 */
import pg from 'pg'
import { NetworkControls } from '../../network/controls.js'
import { processMemory } from '../../network/process.js'
import { DEFAULTS } from './args.js'
import { get } from './http.js'
import { sendConcurrent, reportFailures } from './send.js'
import { round, slope, summarize } from './stats.js'
import { throwIfAborted, type BenchContext, type Json } from './types.js'
import { ConfirmationWatcher } from './watch.js'
import { drainEvents } from './ws-client.js'

const NAMESPACE = 'default'
/** Real broadcasts whose rows the history copies. */
const TEMPLATE_MESSAGES = 2000
const HISTORY_TOPICS = 100
const STEPS = 10
const SAMPLES = 25
const MiB = 2 ** 20
export const POSTGRES_CAPACITY_MESSAGES = 2_000_000

/** The copy of an id: a UUID of its own, the same for the same id and copy (so references stay linked). */
const copyOf = (col: string): string => `CAST(md5(${col} || ':' || g) AS uuid)::text`

type Table = 'data' | 'batches' | 'pins' | 'messages' | 'events'

/** Each table's rows of the template, copied for copies lo..hi (server-side; $1 lo, $2 hi, $3 the template's last seq there). */
const LOAD: readonly [Table, string][] = [
  ['data', `INSERT INTO data (id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, public, local)
   SELECT ${copyOf('d.id')}, d.namespace, d.validator, d.datatype_name, d.datatype_version, d.hash, d.value, d.created, d.blob_hash, d.blob_size, d.blob_name, d.blob_public, d.public, d.local
   FROM data d CROSS JOIN generate_series($1::int, $2::int) g WHERE d.seq <= $3`],
  ['batches', `INSERT INTO batches (id, type, namespace, author, key, node, grp, created, hash, manifest, tx_id, payload_ref, state, local, chain_tx, reason, uploaded, pin_sent, received)
   SELECT ${copyOf('b.id')}, b.type, b.namespace, b.author, b.key, b.node, b.grp, b.created, b.hash, b.manifest, ${copyOf('b.tx_id')}, b.payload_ref, b.state, b.local, b.chain_tx, b.reason, b.uploaded, b.pin_sent, b.received
   FROM batches b CROSS JOIN generate_series($1::int, $2::int) g WHERE b.seq <= $3`],
  ['pins', `INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id, dispatched, held)
   SELECT ${copyOf('p.batch_id')}, p.batch_hash, p.idx, md5(p.hash || ':' || g), p.masked, p.signer, ${copyOf('p.event_id')}, 1, p.held
   FROM pins p CROSS JOIN generate_series($1::int, $2::int) g WHERE p.seq <= $3 AND p.dispatched = 1`],
  ['messages', `INSERT INTO messages (id, namespace, type, txtype, author, key, cid, created, created_key, grp, topics, tag, datahash, hash, data, state, local, batch_id, tx_id, confirmed, confirmed_key, pins)
   SELECT ${copyOf('m.id')}, m.namespace, m.type, m.txtype, m.author, m.key, m.cid, m.created, m.created_key, m.grp, '["history-' || (g % ${HISTORY_TOPICS}) || '"]', m.tag, m.datahash, m.hash, m.data, m.state, m.local,
          ${copyOf('m.batch_id')}, ${copyOf('m.tx_id')}, m.confirmed, m.confirmed_key, m.pins
   FROM messages m CROSS JOIN generate_series($1::int, $2::int) g WHERE m.seq <= $3`],
  ['events', `INSERT INTO events (id, type, namespace, reference, correlator, tx, topic, created)
   SELECT ${copyOf('e.id')}, e.type, e.namespace, ${copyOf('e.reference')}, e.correlator, ${copyOf('e.tx')}, 'history-' || (g % ${HISTORY_TOPICS}), e.created
   FROM events e CROSS JOIN generate_series($1::int, $2::int) g WHERE e.seq <= $3 AND e.type = 'message_confirmed'`],
]

interface Latencies {
  topicLatest50: number
  messageById: number
  replayFromOldest: number
}

interface Step {
  messages: number
  rssMiB: number
  databaseMiB: number
  p50: Latencies
}

export async function postgresCapacity(ctx: BenchContext): Promise<{ [key: string]: Json }> {
  const { members, signal } = ctx
  const m = members[0]!
  // The sql.js default (what its ceiling allows) would say nothing here: the figure is at 2,000,000.
  const target = ctx.options.capacityMessages === DEFAULTS.capacityMessages ? POSTGRES_CAPACITY_MESSAGES : ctx.options.capacityMessages
  const url = new NetworkControls(ctx.dir).databaseUrl(m.org)
  if (url === undefined) throw new Error(`${m.org} is not on PostgreSQL`)
  const nodePid = ctx.processes.find((p) => p.name === m.node)?.pid
  if (nodePid === undefined) throw new Error(`no process for ${m.node}`)
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    ctx.log(`template: ${TEMPLATE_MESSAGES} broadcasts from ${m.org}, confirmed, whose rows the history copies`)
    const watcher = new ConfirmationWatcher(m.org, m.api, NAMESPACE)
    watcher.start(600_000, signal)
    const sent = await sendConcurrent(`${m.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`, 'template', TEMPLATE_MESSAGES, 50, signal)
    reportFailures(ctx, 'template', sent)
    await watcher.waitFor(sent.sent.map((s) => s.id), 300_000, signal, () => {})
    await watcher.stop()
    throwIfAborted(signal)
    const last = async (table: string): Promise<number> => Number((await client.query(`SELECT COALESCE(max(seq), 0) AS n FROM ${table}`)).rows[0].n)
    const template: Record<Table, number> = { data: await last('data'), batches: await last('batches'), pins: await last('pins'), messages: await last('messages'), events: await last('events') }
    const held = async (): Promise<number> => Number((await client.query('SELECT count(*) AS n FROM messages')).rows[0].n)
    const perCopy = Number((await client.query('SELECT count(*) AS n FROM messages WHERE seq <= $1', [template.messages])).rows[0].n)
    const start = await held()
    const topicOnEmpty = await topicOf(client, template.messages)

    const measure = async (topic: string, messages: number): Promise<Step> => {
      const p50 = await latencies(ctx, client, topic)
      const rssMiB = processMemory(nodePid).rss / MiB
      const databaseMiB = Number((await client.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b) / MiB
      ctx.log(
        `  ${messages} messages held: RSS ${rssMiB.toFixed(1)} MiB, database ${databaseMiB.toFixed(0)} MiB; p50 latest 50 of ${topic} ${p50.topicLatest50.toFixed(1)} ms, ` +
          `by id ${p50.messageById.toFixed(1)} ms, replay from oldest (first event) ${p50.replayFromOldest.toFixed(1)} ms`,
      )
      return { messages, rssMiB, databaseMiB, p50 }
    }
    ctx.log(`nearly empty: ${start} messages`)
    const empty = await measure(topicOnEmpty, start)

    const copies = Math.ceil(Math.max(0, target - start) / perCopy)
    ctx.log(`loading ${copies} copies of ${perCopy} messages (with their data, batches, pins and events) in ${STEPS} steps, up to ~${start + copies * perCopy} messages`)
    const steps: Step[] = []
    let done = 0
    for (let s = 1; s <= STEPS && done < copies; s++) {
      const upTo = Math.ceil((copies * s) / STEPS)
      const t = Date.now()
      await client.query('BEGIN')
      for (const [table, sql] of LOAD) await client.query(sql, [done + 1, upTo, template[table]])
      await client.query('COMMIT')
      await client.query('ANALYZE')
      done = upTo
      throwIfAborted(signal)
      ctx.log(` step ${s}: loaded in ${((Date.now() - t) / 1000).toFixed(1)} s`)
      steps.push(await measure('history-7', await held()))
    }
    const full = steps[steps.length - 1] ?? empty
    // Past the first step: its RSS growth is the node's caches and JIT warming to the queries, not the size.
    const fitted = steps.slice(1)
    const rssPer100k = fitted.length >= 2 ? slope(fitted.map((p) => ({ x: p.messages, y: p.rssMiB }))) * 100_000 : NaN
    const ratio = (k: keyof Latencies): number => full.p50[k] / Math.max(1e-3, empty.p50[k])
    ctx.log(`at ${full.messages} messages: RSS ${rssPer100k.toFixed(2)} MiB per 100,000 messages after the first step (target at most 20)`)
    for (const k of ['topicLatest50', 'messageById', 'replayFromOldest'] as const) {
      ctx.log(`  ${k}: p50 ${full.p50[k].toFixed(1)} ms vs ${empty.p50[k].toFixed(1)} ms nearly empty: ${ratio(k).toFixed(2)}x (target at most 2x)`)
    }
    const diskPerMessage = ((full.databaseMiB - empty.databaseMiB) * MiB) / Math.max(1, full.messages - empty.messages)
    ctx.log(`  database ${full.databaseMiB.toFixed(0)} MiB: ${diskPerMessage.toFixed(0)} bytes per message held (with its data, batch share, pins and event)`)
    const lat = (l: Latencies): Json => ({ topicLatest50: round(l.topicLatest50, 2), messageById: round(l.messageById, 2), replayFromOldest: round(l.replayFromOldest, 2) })
    return {
      messages: full.messages,
      rssMiBPer100k: round(rssPer100k, 2),
      diskBytesPerMessage: round(diskPerMessage, 0),
      p50Empty: lat(empty.p50),
      p50Full: lat(full.p50),
      steps: steps.map((p) => ({ messages: p.messages, rssMiB: round(p.rssMiB), databaseMiB: round(p.databaseMiB), p50: lat(p.p50) })),
    }
  } finally {
    await client.end().catch(() => {})
  }
}

/** A topic of the template's messages (the bench's broadcasts carry the default one). */
async function topicOf(client: pg.Client, upTo: number): Promise<string> {
  const r = await client.query<{ topics: string }>('SELECT topics FROM messages WHERE seq <= $1 ORDER BY seq DESC LIMIT 1', [upTo])
  return (JSON.parse(r.rows[0]?.topics ?? '["default"]') as string[])[0] ?? 'default'
}

/** The p50 of each query, from SAMPLES requests each, one at a time. */
async function latencies(ctx: BenchContext, client: pg.Client, topic: string): Promise<Latencies> {
  const m = ctx.members[0]!
  const base = `${m.api}/api/v1/namespaces/${NAMESPACE}`
  // Of the namespace asked for: the history copies the template's system messages (the orgs' and nodes' claims) too.
  const ids = (await client.query<{ id: string }>(`SELECT id FROM messages TABLESAMPLE SYSTEM (1) WHERE namespace = $1 LIMIT ${SAMPLES}`, [NAMESPACE])).rows.map((r) => r.id)
  if (ids.length < SAMPLES) ids.push(...(await client.query<{ id: string }>(`SELECT id FROM messages WHERE namespace = $1 ORDER BY random() LIMIT ${SAMPLES - ids.length}`, [NAMESPACE])).rows.map((r) => r.id))
  const timed = async (f: () => Promise<void>): Promise<number> => {
    const t = performance.now()
    await f()
    return performance.now() - t
  }
  const ok = async (u: string): Promise<void> => {
    const r = await get(u)
    if (r.status !== 200) throw new Error(`GET ${u} answered ${r.status}: ${r.text.slice(0, 200)}`)
  }
  const topicMs: number[] = []
  const idMs: number[] = []
  const replayMs: number[] = []
  const oldest = Number((await client.query('SELECT min(seq) AS s FROM events WHERE namespace = $1', [NAMESPACE])).rows[0].s)
  for (let i = 0; i < SAMPLES; i++) {
    throwIfAborted(ctx.signal)
    topicMs.push(await timed(() => ok(`${base}/messages?topics=${encodeURIComponent(topic)}&limit=50`)))
    idMs.push(await timed(() => ok(`${base}/messages/${ids[i % ids.length]}`)))
    if (i % 3 === 0) {
      const r = await drainEvents({ url: m.ws, start: { type: 'start', namespace: NAMESPACE, ephemeral: true, autoack: true, options: { firstEvent: 'oldest' } }, expected: [oldest], ack: false, capture: false, timeoutMs: 30_000, signal: ctx.signal })
      if (r.problem !== undefined) throw new Error(`replay from oldest: ${r.problem}`)
      replayMs.push(r.firstFrameMs)
    }
  }
  return { topicLatest50: summarize(topicMs).p50, messageById: summarize(idMs).p50, replayFromOldest: summarize(replayMs).p50 }
}
