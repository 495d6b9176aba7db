import type { DatabaseError } from '../errors.js'
import type { Step } from './bridge-protocol.js'

/** One event-loop turn's SQL transaction on PostgreSQL (pg-database.ts): the functions that share its COMMIT. */
export interface PgTick {
  /** The functions that wait for the COMMIT; `group`: their writes went as a group (bridge-protocol.ts). */
  members: { resolve(): void; reject(err: Error): void; group?: number }[]
  /** BEGIN has gone to the server (with the turn's first statement). */
  sent: boolean
  /** The running function's SAVEPOINT is still deferred: nothing ran in it yet. */
  savepointPending: boolean
  wrote: boolean
  /** The connection was lost during the turn: its functions fail with this. */
  broken?: DatabaseError
  /** Groups whose writes failed, with their error: their functions fail, the rest of the turn commits. */
  failed?: Map<number, Error>
}

export const BEGIN: Step = { text: 'BEGIN' }
export const COMMIT: Step = { text: 'COMMIT' }
export const ROLLBACK: Step = { text: 'ROLLBACK' }
export const SAVEPOINT: Step = { text: 'SAVEPOINT parley_tx' }
export const RELEASE: Step = { text: 'RELEASE parley_tx' }
export const ROLLBACK_TO: Step = { text: 'ROLLBACK TO parley_tx; RELEASE parley_tx' }
export const READ_SAVEPOINT: Step = { text: 'SAVEPOINT parley_read' }
export const READ_RELEASE: Step = { text: 'RELEASE parley_read' }
export const READ_ROLLBACK: Step = { text: 'ROLLBACK TO parley_read; RELEASE parley_read' }
