/**
 * What a member does with a broadcast batch another member sent, in this one process and nothing else: the BatchPin
 * log ingested (its pins, its chain event), the payload parsed and verified, the batch stored, its messages confirmed
 * by the aggregator. No chain, IPFS, HTTP or other process takes a share of the CPU, so its CPU per message moves only
 * with this code: the broadcast run's receivers add downloading, the chain follower and event delivery, and share
 * two cores with four other processes, which makes their figure move by ±10 % from one run to the next.
 *
 * Run by the `receive` scenario (receive.ts) as a child process; prints one JSON line with its figures.
 * Usage: receive-pipeline.ts DIR BATCHES [POSTGRES_URL] (the first third of the batches warm up and are not counted;
 * with a URL, the member's database is that PostgreSQL database, which must be empty or hold only this schema).
 */
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { Aggregator } from '../../node/aggregator/aggregator.js'
import { pinIngest } from '../../node/aggregator/pin-ingest.js'
import { RecentBatches } from '../../node/aggregator/recent-batches.js'
import { parseBatch, serializeBatch } from '../../node/batch/payload.js'
import { checkBatch, sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../node/core/hashes.js'
import { newId, type Address, type BatchId, type DataId, type IdentityId, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { DataValidatorImpl } from '../../node/data/validator.js'
import { Database } from '../../node/db/database.js'
import { PgDatabase } from '../../node/db/pg/pg-database.js'
import { openRepositories } from '../../node/db/repos/index.js'
import { migrations } from '../../node/db/schema/index.js'
import { BATCH_PIN_ACTION, type BatchPayload, type Data, type Header } from '../../node/model/index.js'

/** As the broadcast run's batches are: 200 messages of one topic, each with one small JSON value. */
const MESSAGES_PER_BATCH = 200
const KEY = `0x${'ab'.repeat(20)}` as Address
const AUTHOR = 'did:firefly:org/sender'

export interface ReceiveFigures {
  messages: number
  confirmed: number
  /** User + system CPU of this process per counted message, µs (GC and I/O threads included). */
  cpuMicrosPerMessage: number
  userMicrosPerMessage: number
  systemMicrosPerMessage: number
  wallMicrosPerMessage: number
  /** PostgreSQL only: statements sent to the server, and round trips the event loop waited for, per counted message. */
  statementsPerMessage?: number
  roundTripsPerMessage?: number
}

function batch(n: number): BatchPayload {
  const id = newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const data: Data[] = []
  const messages = Array.from({ length: MESSAGES_PER_BATCH }, (_, i) => {
    const value = JSON.stringify({ phase: 'receive', i: n * MESSAGES_PER_BATCH + i, note: 'parley bench', at: Date.now() })
    const d = { id: newId<DataId>(), validator: 'json', namespace: 'default', created: now(), value, hash: dataHash({ valueRaw: value }) } as Data
    data.push(d)
    const header: Header = {
      id: newId<MessageId>(),
      type: 'broadcast',
      txtype: 'batch_pin',
      author: AUTHOR,
      key: KEY,
      created: now(),
      namespace: 'default',
      topics: ['default'],
      tag: 'bench-receive',
      datahash: dataRefsHash([{ id: d.id, hash: d.hash }]),
    }
    return { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }] }
  })
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'broadcast', namespace: 'default', author: AUTHOR, key: KEY, created: now(), hash, tx, messages, data }
}

export async function runReceivePipeline(dir: string, batches: number, postgresUrl?: string): Promise<ReceiveFigures> {
  const db = postgresUrl === undefined ? await Database.open({ dir, migrations }) : await PgDatabase.open({ url: postgresUrl, migrations })
  const repos = openRepositories(db)
  const org = newId<IdentityId>()
  await db.transaction((tx) => {
    repos.identities.insert(tx, { id: org, did: AUTHOR, type: 'org', namespace: 'svc_system', name: 'sender', messages: { claim: newId<MessageId>() }, created: now() })
    repos.identities.insertVerifier(tx, { identity: org, type: 'ethereum_address', value: KEY, created: now() })
  })
  const recent = new RecentBatches()
  let confirmed = 0
  const aggregator = new Aggregator({
    ...repos,
    db,
    refs: repos.blobRefs,
    recent,
    validator: new DataValidatorImpl(() => undefined),
    definitions: [],
    log: (line) => console.error(line),
    onOutcome: (o) => (confirmed += o.confirmed.length),
  })
  aggregator.start()
  await aggregator.whenIdle()
  const ingest = pinIngest({ db, state: repos.state, blockchainEvents: repos.blockchainEvents, pins: repos.pins, events: repos.events, published: () => {}, fetch: () => {}, wake: () => aggregator.wake() })
  // Payloads made and written beforehand, as the bytes a download brings decoded into text: one flat string (as
  // written, the text is a rope of concatenations, which V8 reads more slowly).
  const payloads = Array.from({ length: batches }, (_, n) => {
    const b = batch(n)
    return { b, text: Buffer.from(serializeBatch(b), 'utf8').toString('utf8') }
  })
  const receive = async ({ b, text }: { b: BatchPayload; text: string }, block: number): Promise<void> => {
    const contexts = b.messages.map(() => broadcastContext('default'))
    const protocolId = `${String(block).padStart(12, '0')}/000000/000000`
    const txHash = `0x${block.toString(16).padStart(64, '0')}`
    await ingest([{ blockNumber: block, txIndex: 0, logIndex: 0, protocolId, txHash, author: KEY, timestamp: 1, action: BATCH_PIN_ACTION, txId: b.tx.id, batchId: b.id, batchHash: b.hash, payloadRef: `Qm${b.id}`, contexts }], block)
    const parsed = parseBatch(text)
    const checked = checkBatch(parsed, { batchId: b.id, batchHash: b.hash, txId: b.tx.id })
    if (!checked.ok) throw new Error(`batch ${b.id}: ${checked.reason}`)
    await aggregator.receive(parsed, checked.manifest, `Qm${b.id}`)
    await aggregator.whenIdle()
  }
  const warm = Math.floor(batches / 3)
  for (let i = 0; i < warm; i++) await receive(payloads[i]!, i + 1)
  const confirmedBefore = confirmed
  const stats0 = db.stats()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = warm; i < batches; i++) await receive(payloads[i]!, i + 1)
  const cpu = process.cpuUsage(cpu0)
  const wallMs = performance.now() - t0
  const messages = (batches - warm) * MESSAGES_PER_BATCH
  const stats = db.stats()
  await aggregator.stop()
  await db.close()
  const per = (micros: number): number => Math.round((micros / messages) * 10) / 10
  return {
    messages,
    confirmed: confirmed - confirmedBefore,
    cpuMicrosPerMessage: per(cpu.user + cpu.system),
    userMicrosPerMessage: per(cpu.user),
    systemMicrosPerMessage: per(cpu.system),
    wallMicrosPerMessage: per(wallMs * 1000),
    ...(stats.statements !== undefined && stats0.statements !== undefined ? { statementsPerMessage: per(stats.statements - stats0.statements) } : {}),
    ...(stats.roundTrips !== undefined && stats0.roundTrips !== undefined ? { roundTripsPerMessage: per(stats.roundTrips - stats0.roundTrips) } : {}),
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const [dir, batches, postgresUrl] = process.argv.slice(2)
  if (!dir || !Number.isInteger(Number(batches)) || Number(batches) < 3) {
    console.error('usage: receive-pipeline.ts DIR BATCHES (at least 3) [POSTGRES_URL]')
    process.exit(2)
  }
  runReceivePipeline(dir, Number(batches), postgresUrl).then(
    (figures) => console.log(JSON.stringify(figures)),
    (err: unknown) => {
      console.error(err)
      process.exit(1)
    },
  )
}
