/**
 * Entry point of the PostgreSQL bridge's worker thread (started by bridge.ts): owns one pg connection at a time (a
 * session) and runs the statements the event loop posts, in order, answering each request on the port it came for.
 * The event loop sleeps on the shared flag for sync requests, so this thread answers every request, even when the
 * connection is down (at once, as unavailable). A lost connection is opened again with a backoff (0.25 s doubling to
 * 5 s), beside the queue of requests, never in it.
 */
import { workerData } from 'node:worker_threads'
import pg from 'pg'
import { isConnectionLoss, type BridgeReply, type BridgeRequest, type BridgeWorkerData, type SessionControl, type SessionReport, type Step, type StepFailure } from './bridge-protocol.js'

const { flag, syncPort, asyncPort } = workerData as BridgeWorkerData
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

interface Session {
  id: number
  url: string
  statementTimeoutMs: number
  client?: pg.Client
  lastError: string
  connecting: boolean
  closed: boolean
  /** The connection was lost inside a transaction: refuse its remaining statements until the event loop ends it. */
  lostTransaction: boolean
  inTransaction: boolean
}

let current: Session | undefined
let queue: Promise<void> = Promise.resolve()

function report(r: SessionReport): void {
  asyncPort.postMessage(r)
}

async function connect(s: Session): Promise<void> {
  if (s.connecting) return
  s.connecting = true
  let delayMs = 250
  while (!s.closed) {
    const c = new pg.Client({ connectionString: s.url, types, keepAlive: true, application_name: 'parley' })
    // Errors of an idle connection (the server stopped) arrive here rather than through a query.
    c.on('error', (err) => lose(s, c, err.message))
    try {
      await c.connect()
      await c.query(`SET synchronous_commit = on; SET statement_timeout = ${Math.floor(s.statementTimeoutMs)}`)
      if (s.closed) {
        await c.end().catch(() => {})
        break
      }
      s.client = c
      report({ kind: 'health', session: s.id, up: true, detail: 'connected' })
      break
    } catch (err) {
      s.lastError = err instanceof Error ? err.message : String(err)
      c.end().catch(() => {})
      report({ kind: 'health', session: s.id, up: false, detail: s.lastError })
      await new Promise((r) => setTimeout(r, delayMs))
      delayMs = Math.min(delayMs * 2, 5000)
    }
  }
  s.connecting = false
}

function lose(s: Session, c: pg.Client, why: string): void {
  if (s.client !== c) return
  s.client = undefined
  s.lastError = why
  if (s.inTransaction) s.lostTransaction = true
  s.inTransaction = false
  c.end().catch(() => {})
  if (s.closed) return
  report({ kind: 'health', session: s.id, up: false, detail: why })
  void connect(s)
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
/** A step that ends the transaction: its last statement is COMMIT or ROLLBACK (not ROLLBACK TO a savepoint). */
const ENDS_TX = /(^|;\s*)(COMMIT|ROLLBACK)\s*$/i

async function run(s: Session | undefined, req: BridgeRequest): Promise<BridgeReply> {
  if (!s) return { id: req.id, ok: false, failure: { message: 'the database is closed', unavailable: true } }
  const first = req.steps[0]?.text ?? ''
  if (s.lostTransaction && !TX_START.test(first) && !TX_END.test(first)) {
    return { id: req.id, ok: false, failure: { message: `the connection to the database was lost inside this transaction (${s.lastError})`, unavailable: true } }
  }
  s.lostTransaction = false
  const c = s.client
  if (!c) return { id: req.id, ok: false, failure: { message: `not connected to the database (${s.lastError})`, unavailable: true } }
  let result: pg.QueryResult | undefined
  try {
    for (const step of merge(req.steps)) {
      if (TX_START.test(step.text)) s.inTransaction = true
      unsafeInteger = undefined
      const r: pg.QueryResult | pg.QueryResult[] =
        step.values === undefined && step.name === undefined ? await c.query(step.text) : await c.query({ text: step.text, values: step.values ?? [], ...(step.name ? { name: step.name } : {}) })
      result = Array.isArray(r) ? r[r.length - 1] : r
      if (ENDS_TX.test(step.text)) s.inTransaction = false
      if (unsafeInteger !== undefined) {
        return { id: req.id, ok: false, failure: { message: `integer ${unsafeInteger} is past 2^53: it cannot be read back exactly as a number`, sqlState: '22003', unavailable: false } }
      }
    }
  } catch (err) {
    const failure = failureOf(err)
    if (failure.unavailable) lose(s, c, failure.message)
    return { id: req.id, ok: false, failure }
  }
  return { id: req.id, ok: true, rows: (result?.rows ?? []) as Record<string, unknown>[], rowCount: result?.rowCount ?? 0 }
}

function control(m: SessionControl): void {
  if (m.kind === 'open') {
    const s: Session = { id: m.session, url: m.url, statementTimeoutMs: m.statementTimeoutMs, lastError: 'not connected yet', connecting: false, closed: false, lostTransaction: false, inTransaction: false }
    current = s
    void connect(s)
    return
  }
  const s = current
  if (!s || s.id !== m.session) return report({ kind: 'closed', session: m.session })
  current = undefined
  s.closed = true
  const c = s.client
  s.client = undefined
  void (c ? c.end().catch(() => {}) : Promise.resolve()).then(() => report({ kind: 'closed', session: m.session }))
}

syncPort.on('message', (m: BridgeRequest | SessionControl) => {
  queue = queue.then(async () => {
    if ('kind' in m) return control(m)
    const reply = await run(current, m)
    if (m.sync) {
      syncPort.postMessage(reply)
      Atomics.store(raised, 0, 1)
      Atomics.notify(raised, 0)
    } else asyncPort.postMessage(reply)
  })
})
