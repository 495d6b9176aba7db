/**
 * Entry point of the PostgreSQL bridge's worker thread (started by bridge.ts): owns one pg connection at a time (a
 * session) and runs the statements the event loop posts, in order, answering each request on the port it came for.
 * The event loop sleeps on the shared flag for sync requests, so this thread answers every request, even when the
 * connection is down (at once, as unavailable). A lost connection is opened again with a backoff (0.25 s doubling to
 * 5 s), beside the queue of requests, never in it.
 */
import { hostname } from 'node:os'
import { workerData } from 'node:worker_threads'
import pg from 'pg'
import { merge, pipelined, spanEnd, submit, TX_END, TX_START } from './bridge-steps.js'
import { claimMemberLock, connectionName, heldByText, settleMemberLock, withoutApplicationName, type Backend, type LockQuery } from './member-lock.js'
import { GROUP_ROLLBACK, isConnectionLoss, type BridgeReply, type GroupFailure, type BridgeRequest, type BridgeTiming, type BridgeWorkerData, type SessionControl, type SessionReport, type Step, type StepFailure } from './bridge-protocol.js'

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
  timing: BridgeTiming
  /** Its connections' application_name (member-lock.ts). */
  name: string
  client?: pg.Client
  lastError: string
  connecting: boolean
  closed: boolean
  /**
   * The server process of the connection that last held the member lock: a lock it still holds is this session's.
   * Set once connected, after which a lock held by another connection means the database was taken over meanwhile.
   */
  held: Backend | undefined
  /** Until when a first open waits for another holder of the lock (epoch ms). */
  waitForOthersUntil: number
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
    const { timing } = s
    const c = new pg.Client({
      connectionString: withoutApplicationName(s.url),
      types,
      keepAlive: true,
      keepAliveInitialDelayMillis: timing.keepAliveDelayMs,
      connectionTimeoutMillis: timing.connectTimeoutMs,
      application_name: s.name,
      // A request's statements go out together (pipelined): requests themselves still run one after another.
      pipeline: true,
    })
    // Errors of an idle connection (the server stopped) arrive here rather than through a query.
    c.on('error', (err) => {
      // pg emits this only once the socket is dead.
      ended.add(c)
      lose(s, c, err.message)
    })
    c.on('end', () => ended.add(c))
    try {
      // The setup is bounded too: a server that accepts the connection and then hangs must not hold the session.
      const connectWhy = `the database did not answer within ${timing.connectTimeoutMs / 1000} s of connecting`
      await bounded(c, timing.connectTimeoutMs, connectWhy, async () => {
        await c.connect()
        // The server's keepalives end this connection's server process within ~25 s of this host or its network going,
        // and with it the member lock it holds (PostgreSQL's default waits for the system's, two hours).
        await c.query(
          `SET synchronous_commit = on; SET statement_timeout = ${Math.floor(timing.statementTimeoutMs)}; ` +
            'SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3; SET tcp_user_timeout = 25000',
        )
      })
      if (s.closed) {
        await c.end().catch(() => {})
        break
      }
      const answerWhy = `the database did not answer within ${timing.answerTimeoutMs / 1000} s`
      // pg_terminate_backend waits up to 2 s for the server process to go: a deadline below that would drop this
      // connection each time.
      const terminateMs = Math.max(timing.answerTimeoutMs, 5_000)
      const rows: LockQuery = async (text, values) => (await c.query(text, values)).rows as Record<string, unknown>[]
      let told = false
      const lock = await settleMemberLock({
        claim: () => bounded(c, timing.answerTimeoutMs, answerWhy, () => claimMemberLock(rows)),
        terminate: (pid) => bounded(c, terminateMs, `the database did not end server process ${pid} within ${terminateMs / 1000} s`, () => c.query('SELECT pg_terminate_backend($1, 2000)', [pid])).then(() => {}, () => {}),
        previous: s.held,
        waitingForOwn: (holder) => {
          s.lastError = `waiting for the server to end this member's previous connection (server process ${holder.pid}), which holds its lock`
          if (!told) report({ kind: 'health', session: s.id, up: false, detail: s.lastError })
          told = true
        },
        closed: () => s.closed,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        waitForOthersUntil: s.held !== undefined ? undefined : s.waitForOthersUntil,
      })
      if ('closed' in lock) {
        await c.end().catch(() => {})
        break
      }
      if ('refused' in lock) {
        c.end().catch(() => {})
        s.lastError = heldByText(lock.refused)
        report({ kind: 'health', session: s.id, up: false, detail: s.lastError, locked: true })
        // Taken over while this process was away: what it holds in memory may be stale now, so it writes nothing more.
        if (s.held !== undefined) break
        await new Promise((r) => setTimeout(r, delayMs))
        delayMs = Math.min(delayMs * 2, 5000)
        continue
      }
      s.held = lock.held
      s.client = c
      report({ kind: 'health', session: s.id, up: true, detail: 'connected', backend: lock.held })
      break
    } catch (err) {
      s.lastError = timedOut.get(c) ?? (err instanceof Error ? err.message : String(err))
      c.end().catch(() => {})
      report({ kind: 'health', session: s.id, up: false, detail: s.lastError })
      await new Promise((r) => setTimeout(r, delayMs))
      delayMs = Math.min(delayMs * 2, 5000)
    }
  }
  s.connecting = false
}

/** Clients whose connection has ended: a failure on one is a lost connection, whatever its error says. */
const ended = new WeakSet<pg.Client>()
/** Why a connection was dropped by its deadline, to name it instead of pg's "Connection terminated". */
const timedOut = new WeakMap<pg.Client, string>()

/**
 * Runs `f` on `c`, dropping the connection if it takes longer than `ms` (the server hung, or the network went): pg
 * would wait forever, and every later request with it. Its socket is destroyed, which fails what is in flight.
 */
async function bounded<T>(c: pg.Client, ms: number, why: string, f: () => Promise<T>): Promise<T> {
  if (!Number.isFinite(ms)) return f()
  const timer = setTimeout(() => {
    timedOut.set(c, why)
    ended.add(c)
    // pg has no public way to abort a query; ending its stream makes it fail what is in flight and emit 'end'.
    ;(c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
  }, ms)
  try {
    return await f()
  } finally {
    clearTimeout(timer)
  }
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

/** A failure as the event loop gets it; `c` is the connection it happened on. */
function failureOf(err: unknown, c: pg.Client): StepFailure {
  const e = err as { message?: string; code?: unknown }
  const sqlState = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined
  // A connection that ended (reset, refused, dropped by its deadline) is lost whatever the error says; a client-side
  // error on a live connection (pg refusing a value, say) leaves it as it was.
  const lost = ended.has(c) || (sqlState !== undefined && isConnectionLoss(sqlState) && sqlState !== '57014' && sqlState !== '25006')
  const message = timedOut.get(c) ?? e.message ?? String(err)
  return { message, ...(sqlState ? { sqlState } : {}), unavailable: lost || isConnectionLoss(sqlState), lost }
}

/** Ends whatever transaction the connection is in (a failed one, or one the event loop lost track of). */
async function rollback(s: Session, c: pg.Client): Promise<void> {
  s.inTransaction = false
  if (ended.has(c)) return
  await bounded(c, s.timing.answerTimeoutMs, `the database did not answer ROLLBACK within ${s.timing.answerTimeoutMs / 1000} s`, () => c.query('ROLLBACK')).catch(() => {})
}

async function run(s: Session | undefined, req: BridgeRequest): Promise<BridgeReply> {
  if (!s) return { id: req.id, ok: false, failure: { message: 'the database is closed', unavailable: true, lost: true } }
  const first = req.steps[0]?.text ?? ''
  if (s.lostTransaction && !TX_START.test(first) && !TX_END.test(first)) {
    return { id: req.id, ok: false, failure: { message: `the connection to the database was lost inside this transaction (${s.lastError})`, unavailable: true } }
  }
  s.lostTransaction = false
  const c = s.client
  if (!c) return { id: req.id, ok: false, failure: { message: `not connected to the database (${s.lastError})`, unavailable: true, lost: true } }
  let result: pg.QueryResult | undefined
  // One deadline for the whole request: the event loop, asleep on it, waits for the whole.
  const deadline = req.unbounded ? Infinity : performance.now() + s.timing.answerTimeoutMs
  const why = `the database did not answer within ${s.timing.answerTimeoutMs / 1000} s`
  const endsTx = req.steps.some((step) => TX_END.test(step.text))
  let at: Step | undefined
  let groupFailures: GroupFailure[] | undefined
  const steps = merge(req.steps)
  try {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!
      at = step
      // A transaction the event loop gave up on (its request unanswered in time) must not live on under a new one.
      if (TX_START.test(step.text) && s.inTransaction) await rollback(s, c)
      if (TX_START.test(step.text)) s.inTransaction = true
      const end = s.inTransaction ? spanEnd(steps, i) : i
      if (end - i >= 2) {
        const failed = await bounded(c, deadline - performance.now(), why, () => pipelined(c, steps.slice(i, end)))
        if (failed === undefined) {
          i = end - 1
          continue
        }
        const culprit = steps[i + failed.index]!
        at = culprit
        const failure = failureOf(failed.error, c)
        if (culprit.group === undefined || failure.unavailable) throw failed.error
        failure.statement = culprit.text
        await bounded(c, deadline - performance.now(), why, () => c.query(GROUP_ROLLBACK))
        // What followed it was refused by the aborted transaction, not run: it goes again after the group.
        i = afterGroupFailure(steps, i + failed.index, culprit.group, failure, (groupFailures ??= []))
        continue
      }
      if (step.group !== undefined) {
        const failure = await runGroupStep(c, step, deadline, why)
        if (failure === undefined) continue
        i = afterGroupFailure(steps, i, step.group, failure, (groupFailures ??= []))
        continue
      }
      unsafeInteger = undefined
      const r: pg.QueryResult | pg.QueryResult[] = await bounded(c, deadline - performance.now(), why, () => submit(c, step))
      result = Array.isArray(r) ? r[r.length - 1] : r
      if (TX_END.test(step.text)) {
        s.inTransaction = false
        // PostgreSQL answers COMMIT of a failed transaction with ROLLBACK, and no error.
        if (/^\s*COMMIT/i.test(step.text) && result?.command !== 'COMMIT') {
          return { id: req.id, ok: false, failure: { message: 'the transaction had failed on the server: its COMMIT rolled it back', sqlState: '25P02', unavailable: false } }
        }
      }
      if (unsafeInteger !== undefined) {
        return { id: req.id, ok: false, failure: { message: `integer ${unsafeInteger} is past 2^53: it cannot be read back exactly as a number`, sqlState: '22003', unavailable: false } }
      }
    }
  } catch (err) {
    const failure = failureOf(err, c)
    if (at) failure.statement = at.text
    if (failure.lost) lose(s, c, failure.message)
    // The request was to end the transaction and did not get there: it ends here, so the next one starts clean.
    else if (endsTx && s.inTransaction) await rollback(s, c)
    return { id: req.id, ok: false, failure, ...(groupFailures?.length ? { groupFailures } : {}) }
  }
  return { id: req.id, ok: true, rows: (result?.rows ?? []) as Record<string, unknown>[], rowCount: result?.rowCount ?? 0, ...(groupFailures?.length ? { groupFailures } : {}) }
}

/**
 * After a step of `group` at `i` failed and the group was rolled back to its savepoint: answers the index of the
 * group's last step, so that its other steps are skipped. A group that merged others (coalesce.ts) has them run next,
 * each in a savepoint of its own inside the merged group's, so that only a function whose own row fails is failed;
 * any other group's failure is its own.
 */
function afterGroupFailure(steps: Step[], i: number, group: number, failure: StepFailure, failures: GroupFailure[]): number {
  let start = i
  while (steps[start - 1]?.group === group) start--
  let end = i
  while (steps[end + 1]?.group === group) end++
  let fallback: Step[] | undefined
  for (let k = start; k <= end && fallback === undefined; k++) fallback = steps[k]!.fallback
  if (fallback) steps.splice(end + 1, 0, ...merge(fallback))
  else failures.push({ group, failure })
  return end
}

/**
 * Runs one step of a group; answers its failure once the group is rolled back to its savepoint, or throws (the whole
 * request fails) when the failure costs the connection or the rollback itself fails.
 */
async function runGroupStep(c: pg.Client, step: Step, deadline: number, why: string): Promise<StepFailure | undefined> {
  try {
    await bounded(c, deadline - performance.now(), why, () => submit(c, step))
    return undefined
  } catch (err) {
    const failure = failureOf(err, c)
    if (failure.unavailable) throw err
    failure.statement = step.text
    await bounded(c, deadline - performance.now(), why, () => c.query(GROUP_ROLLBACK))
    return failure
  }
}

function control(m: SessionControl): void {
  if (m.kind === 'open') {
    const s: Session = {
      id: m.session,
      url: m.url,
      timing: m.timing,
      name: connectionName(m.pid, m.session, hostname()),
      lastError: 'not connected yet',
      connecting: false,
      closed: false,
      held: m.held,
      waitForOthersUntil: Date.now() + m.timing.lockWaitMs,
      lostTransaction: false,
      inTransaction: false,
    }
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
    // Every request is answered, whatever happens: the event loop may be asleep waiting for it.
    const reply = await run(current, m).catch((err: unknown): BridgeReply => ({ id: m.id, ok: false, failure: { message: `the database worker failed: ${err instanceof Error ? err.message : String(err)}`, unavailable: true } }))
    if (m.sync) {
      syncPort.postMessage(reply)
      Atomics.store(raised, 0, 1)
      Atomics.notify(raised, 0)
    } else asyncPort.postMessage(reply)
  })
})
