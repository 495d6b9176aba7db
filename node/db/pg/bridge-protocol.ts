/**
 * What the event loop and the PostgreSQL bridge's worker thread (bridge-worker.ts) say to each other. Only types and
 * plain data: the worker imports this and pg, nothing else of the node.
 */
import type { MessagePort } from 'node:worker_threads'
import type { Backend } from './member-lock.js'

/** One statement: a named one is prepared once per connection and reused. Without values it goes as a simple query. */
export interface Step {
  text: string
  values?: unknown[]
  name?: string
  /**
   * The steps of one group, a transaction function's SAVEPOINT parley_tx and the writes it queued: one that fails
   * rolls the group back (GROUP_ROLLBACK), its remaining steps are skipped, and the request goes on; the failure is
   * answered in `groupFailures`. A failure that costs the connection still fails the whole request.
   */
  group?: number
  /**
   * On the first insert of a group that merged other groups' inserts (coalesce.ts): those groups, as they were. When
   * the merged group fails, the worker rolls it back and runs them in its place, each failing alone.
   */
  fallback?: Step[]
}

/** What a failing group runs: back to its savepoint, which the step after the group (its RELEASE) then ends. */
export const GROUP_ROLLBACK = 'ROLLBACK TO parley_tx'

export interface GroupFailure {
  group: number
  failure: StepFailure
}

/**
 * Statements run in order on the worker's one connection; the reply is the last one's result, or the first failure
 * (the rest are not run). `sync` requests are answered on the sync port with the shared flag raised; the others on the
 * async port.
 */
export interface BridgeRequest {
  id: number
  sync: boolean
  steps: Step[]
  /** No deadline on the worker's side (migrations at open, which may rebuild a large table). */
  unbounded?: boolean
}

export interface StepFailure {
  message: string
  /** PostgreSQL's SQLSTATE, when the server answered. */
  sqlState?: string
  /** The connection is gone (refused, reset, server shutting down, no answer): the outcome of the request is unknown. */
  unavailable: boolean
  /** The worker has no connection now (it reconnects, and reports when it is back). */
  lost?: boolean
  /** The statement that failed, as sent: of several in one request (queued writes), which one. */
  statement?: string
}

export type BridgeReply =
  | { id: number; ok: true; rows: Record<string, unknown>[]; rowCount: number; groupFailures?: GroupFailure[] }
  | { id: number; ok: false; failure: StepFailure; groupFailures?: GroupFailure[] }

/**
 * A worker serves one database at a time, a session: `open` starts one (connects, and keeps reconnecting), `close`
 * ends it (answered with `closed`), after which the worker may serve another (bridge.ts keeps idle workers).
 */
export type SessionControl =
  /**
   * `pid`: the process's, in the connection's name; `held`: the server process that last held the member lock, when a
   * new worker takes over a session that was connected on one that died.
   */
  | { kind: 'open'; session: number; url: string; timing: BridgeTiming; pid: number; held: Backend | undefined }
  | { kind: 'close'; session: number }

/** The limits of a session (PgDatabaseOptions.timing); tests lower them to see a hung server in seconds. */
export interface BridgeTiming {
  /** The server cancels a statement that runs longer (statement_timeout; 0 for none). */
  statementTimeoutMs: number
  /**
   * A request without an answer this long is given up: the worker drops its connection (the server may be hung, or
   * the network partitioned) and reconnects; the event loop, which sleeps on sync requests, waits no longer than this.
   */
  answerTimeoutMs: number
  /** How long opening a connection may take. */
  connectTimeoutMs: number
  /** TCP keepalive's first probe after this much silence on an idle connection. */
  keepAliveDelayMs: number
  /** How long a first open waits for another holder of the member lock to let it go (member-lock.ts; 30 s by default). */
  lockWaitMs: number
}

/** Sent on the async port when the session's connection goes or comes back, and when the session is closed. */
export type SessionReport =
  /**
   * `locked`: another process holds the member's lock (member-lock.ts), which no reconnecting mends; `backend`: the
   * server process of the connection now up.
   */
  | { kind: 'health'; session: number; up: boolean; detail: string; locked?: boolean; backend?: Backend }
  | { kind: 'closed'; session: number }

export interface BridgeWorkerData {
  /** Int32Array over it: [0] is raised to 1 when a sync reply is posted. */
  flag: SharedArrayBuffer
  syncPort: MessagePort
  asyncPort: MessagePort
}

/**
 * SQLSTATE classes and codes that mean the database cannot serve now, not that the statement was wrong: the connection
 * or the server went away, a statement cancelled for taking too long, a server in read-only mode (a standby after a
 * failover). A failure without a SQLSTATE is the client's own and says nothing about the connection.
 */
export function isConnectionLoss(sqlState: string | undefined): boolean {
  if (sqlState === undefined) return false
  return sqlState.startsWith('08') || sqlState === '57P01' || sqlState === '57P02' || sqlState === '57P03' || sqlState === '57014' || sqlState === '25006'
}
