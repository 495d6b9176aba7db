/**
 * What the event loop and the PostgreSQL bridge's worker thread (bridge-worker.ts) say to each other. Only types and
 * plain data: the worker imports this and pg, nothing else of the node.
 */
import type { MessagePort } from 'node:worker_threads'

/** One statement: a named one is prepared once per connection and reused. Without values it goes as a simple query. */
export interface Step {
  text: string
  values?: unknown[]
  name?: string
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
}

export interface StepFailure {
  message: string
  /** PostgreSQL's SQLSTATE, when the server answered. */
  sqlState?: string
  /** The connection is gone (refused, reset, server shutting down, no answer): the outcome of the request is unknown. */
  unavailable: boolean
}

export type BridgeReply =
  | { id: number; ok: true; rows: Record<string, unknown>[]; rowCount: number }
  | { id: number; ok: false; failure: StepFailure }

/** Sent on the async port when the connection goes or comes back. */
export interface HealthReport {
  kind: 'health'
  up: boolean
  detail: string
}

export interface BridgeWorkerData {
  url: string
  /** Int32Array over it: [0] is raised to 1 when a sync reply is posted. */
  flag: SharedArrayBuffer
  syncPort: MessagePort
  asyncPort: MessagePort
  /** The server cancels a statement running longer (ms), before the event loop would give up waiting for it. */
  statementTimeoutMs: number
}

/** SQLSTATE classes and codes that mean the connection or the server went away, not that the statement was wrong. */
export function isConnectionLoss(sqlState: string | undefined): boolean {
  if (sqlState === undefined) return true
  return sqlState.startsWith('08') || sqlState === '57P01' || sqlState === '57P02' || sqlState === '57P03'
}
