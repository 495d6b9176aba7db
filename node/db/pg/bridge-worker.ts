/**
 * Entry point of the PostgreSQL bridge's worker thread (started by bridge.ts): owns the member's one pg connection and
 * runs the statements the event loop posts, in order, answering each request on the port it came for. The event loop
 * sleeps on the shared flag for sync requests, so this thread must answer every request, even when the connection is
 * down (at once, as unavailable). A lost connection is re-opened with a backoff (0.25 s doubling to 5 s).
 */
import { workerData, type MessagePort } from 'node:worker_threads'
import pg from 'pg'
import { isConnectionLoss, type BridgeReply, type BridgeRequest, type BridgeWorkerData, type HealthReport, type Step, type StepFailure } from './bridge-protocol.js'

const { url, flag, syncPort, asyncPort, statementTimeoutMs } = workerData as BridgeWorkerData
const raised = new Int32Array(flag)

/** Set by the int8 parser when a value passes 2^53: the statement fails instead of answering a rounded number. */
let unsafeInteger: string | undefined
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    // The schema has no booleans: SQLite's comparisons and EXISTS give 1 or 0, and so do PostgreSQL's here.
    if (oid === pg.types.builtins.BOOL) return (v) => (v === 't' ? 1 : 0)
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) {
      return (v) => {
        const n = Number(v)
        if (oid === pg.types.builtins.INT8 && !Number.isSafeInteger(n)) unsafeInteger = v
        return n
      }
    }
    // JSON as the text SQLite would return; callers parse it.
    if (oid === pg.types.builtins.JSON || oid === pg.types.builtins.JSONB) return (v) => v
    return pg.types.getTypeParser(oid, format ?? 'text') as (value: string) => unknown
  },
}

let client: pg.Client | undefined
let lastError = 'not connected yet'
/** The connection was lost inside a transaction: refuse its remaining statements until the event loop ends it. */
let lostTransaction = false
let inTransaction = false
let delayMs = 250
let connecting = false
let queue: Promise<void> = Promise.resolve()

function report(up: boolean, detail: string): void {
  const h: HealthReport = { kind: 'health', up, detail }
  asyncPort.postMessage(h)
}

/** Runs beside the request queue, never in it: requests meanwhile are answered at once, as unavailable. */
async function connect(): Promise<void> {
  if (connecting) return
  connecting = true
  for (;;) {
    const c = new pg.Client({ connectionString: url, types, keepAlive: true, application_name: 'parley' })
    // Errors of an idle connection (the server stopped) arrive here rather than through a query.
    c.on('error', (err) => lose(c, err.message))
    try {
      await c.connect()
      await c.query(`SET synchronous_commit = on; SET statement_timeout = ${Math.floor(statementTimeoutMs)}`)
      client = c
      delayMs = 250
      connecting = false
      report(true, 'connected')
      return
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err)
      c.end().catch(() => {})
      report(false, lastError)
      await new Promise((r) => setTimeout(r, delayMs))
      delayMs = Math.min(delayMs * 2, 5000)
    }
  }
}

function lose(c: pg.Client, why: string): void {
  if (client !== c) return
  client = undefined
  lastError = why
  if (inTransaction) lostTransaction = true
  inTransaction = false
  c.end().catch(() => {})
  report(false, why)
  void connect()
}

function failureOf(err: unknown): StepFailure {
  const e = err as { message?: string; code?: unknown }
  const sqlState = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined
  return { message: e.message ?? String(err), ...(sqlState ? { sqlState } : {}), unavailable: isConnectionLoss(sqlState) }
}

/** Consecutive parameterless steps go as one simple query: one round trip for `RELEASE ...; SAVEPOINT ...`. */
function merge(steps: Step[]): Step[] {
  const out: Step[] = []
  for (const s of steps) {
    const prev = out[out.length - 1]
    if (prev && prev.values === undefined && prev.name === undefined && s.values === undefined && s.name === undefined) out[out.length - 1] = { text: `${prev.text}; ${s.text}` }
    else out.push(s)
  }
  return out
}

const TX_START = /^\s*BEGIN\b/i
const TX_END = /^\s*(COMMIT|ROLLBACK)\b/i

async function run(req: BridgeRequest): Promise<BridgeReply> {
  const first = req.steps[0]?.text ?? ''
  if (lostTransaction && !TX_START.test(first) && !TX_END.test(first)) {
    return { id: req.id, ok: false, failure: { message: `the connection to the database was lost inside this transaction (${lastError})`, unavailable: true } }
  }
  lostTransaction = false
  const c = client
  if (!c) return { id: req.id, ok: false, failure: { message: `not connected to the database (${lastError})`, unavailable: true } }
  let result: pg.QueryResult | undefined
  try {
    for (const s of merge(req.steps)) {
      if (TX_START.test(s.text)) inTransaction = true
      unsafeInteger = undefined
      const r: pg.QueryResult | pg.QueryResult[] = s.values === undefined && s.name === undefined ? await c.query(s.text) : await c.query({ text: s.text, values: s.values ?? [], ...(s.name ? { name: s.name } : {}) })
      result = Array.isArray(r) ? r[r.length - 1] : r
      if (/\b(COMMIT|ROLLBACK)\s*$/i.test(s.text) && !/\bROLLBACK\s+TO\b[^;]*$/i.test(s.text)) inTransaction = false
      if (unsafeInteger !== undefined) {
        return { id: req.id, ok: false, failure: { message: `integer ${unsafeInteger} is past 2^53: it cannot be read back exactly as a number`, sqlState: '22003', unavailable: false } }
      }
    }
  } catch (err) {
    const failure = failureOf(err)
    if (failure.unavailable) lose(c, failure.message)
    return { id: req.id, ok: false, failure }
  }
  return { id: req.id, ok: true, rows: (result?.rows ?? []) as Record<string, unknown>[], rowCount: result?.rowCount ?? 0 }
}

function answer(req: BridgeRequest, reply: BridgeReply, port: MessagePort): void {
  port.postMessage(reply)
  if (req.sync) {
    Atomics.store(raised, 0, 1)
    Atomics.notify(raised, 0)
  }
}

syncPort.on('message', (req: BridgeRequest) => {
  queue = queue.then(async () => answer(req, await run(req), req.sync ? syncPort : asyncPort))
})

void connect()
