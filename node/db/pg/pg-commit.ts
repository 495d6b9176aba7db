import { DatabaseError } from '../errors.js'
import type { BridgeReply } from './bridge-protocol.js'
import type { PgTick } from './pg-tick.js'
import { errorOf } from './statements.js'

/** Groups that failed in a reply (bridge-protocol.ts): their functions' promises reject when the turn ends. */
export function noteGroups(tick: PgTick, reply: BridgeReply, where: string): void {
  if (!reply.groupFailures) return
  for (const { group, failure } of reply.groupFailures) (tick.failed ??= new Map()).set(group, errorOf(failure, where))
}

/**
 * Settles the functions of a turn by its COMMIT's reply: each resolves, unless its group of writes failed; all reject
 * when the COMMIT failed. Answers whether the turn is durable.
 */
export function committed(tick: PgTick, reply: BridgeReply, where: string): boolean {
  noteGroups(tick, reply, where)
  if (reply.ok) {
    for (const m of tick.members) {
      const failed = m.group === undefined ? undefined : tick.failed?.get(m.group)
      if (failed) m.reject(failed)
      else m.resolve()
    }
    return true
  }
  // A COMMIT whose connection was lost may or may not have happened: it is never reported as durable.
  const err = reply.failure.unavailable
    ? new DatabaseError('DB_UNAVAILABLE', `the database ${where} went away during COMMIT; whether it committed is unknown: ${reply.failure.message}`)
    : errorOf(reply.failure, where, 'COMMIT')
  for (const m of tick.members) m.reject(err)
  return false
}
