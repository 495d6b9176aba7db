import { isParleyError } from '../core/errors.js'
import { now, type Timestamp } from '../core/time.js'
import type { Tx } from '../db/database.js'
import type { BatchPayload, Pin } from '../model/index.js'
import type { AggregatorDeps } from './aggregator.js'
import { Pass, type PassResult } from './pass.js'
import type { StandingQueues } from './standing.js'
import { stageReceivedBatch } from './staged-batch.js'
import { storeReceivedBatch } from './store-batch.js'
import type { WalkPosition } from './walk.js'

/** A verified broadcast batch handed over to be stored (Aggregator.receive), settled once its transaction is durable. */
export interface Arrival {
  batch: BatchPayload
  manifest: string
  payloadRef: string
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * What storing an arrival came to: stored and walked in one transaction (the pass's result, its time, and the messages'
 * write count at its end), or stored alone, its pins left to the walk from `firstPin` (its first waiting pin, if any).
 */
export type Received = { kind: 'walked'; result: PassResult; at: Timestamp; writes: number } | { kind: 'stored'; firstPin: number | undefined }

/**
 * Stores an arrival and walks the page its arrival starts in one transaction (Aggregator.receive). When that cannot be
 * done (a batch the walk cannot decide from memory, rows held here already, or any failure of that transaction: a
 * definition handler's bug, a lost connection), the batch is stored alone, as storeReceivedBatch stores it, so that a
 * failure of the walk never keeps a batch from being stored. Throws only when the batch cannot be stored at all:
 * BAD_PEER_DATA (nothing of it can be), or the failure of that second transaction too.
 */
export async function storeArrival(deps: AggregatorDeps, walk: WalkPosition, queues: StandingQueues, a: Arrival): Promise<Received> {
  const { batch: b, manifest, payloadRef } = a
  let page: Pin[] | undefined
  try {
    return await deps.db.transaction((tx): Received => {
      deps.batches.dropRefused(tx, b.id, b.hash)
      const staged = stageReceivedBatch(deps, tx, b, manifest, payloadRef)
      if (staged === undefined) return { kind: 'stored', firstPin: storeAlone(deps, tx, b, manifest, payloadRef) }
      // What an earlier store of this batch left in memory (its transaction failed) is not what is stored now.
      deps.recent?.forget(b.id, b.hash)
      const first = deps.pins.minUndispatchedSeqOfBatch(b.id, b.hash, tx)
      walk.rewind(first)
      page = first === undefined ? undefined : walk.nextPage(tx)
      // Its verdicts come after its arrival (the record's `received`), as a trace shows them.
      const at = now()
      const result = page === undefined ? undefined : new Pass(deps, queues, tx, at, staged).run(page)
      staged.write(tx, deps.messages)
      return result === undefined ? { kind: 'stored', firstPin: first } : { kind: 'walked', result, at, writes: deps.messages.writes }
    })
  } catch (err) {
    // Nothing read here: on PostgreSQL a lost connection fails every statement of this turn.
    if (page !== undefined) walk.failedPage(page)
    if (isParleyError(err, 'BAD_PEER_DATA')) throw err
    return { kind: 'stored', firstPin: await storeUnwalked(deps, b, manifest, payloadRef) }
  }
}

/**
 * Stores a received batch as storeReceivedBatch does, in a transaction of its own, its pins left to the walk; answers its
 * first waiting pin, read in that transaction.
 */
export function storeUnwalked(deps: AggregatorDeps, b: BatchPayload, manifest: string, payloadRef: string): Promise<number | undefined> {
  return deps.db.transaction((tx) => {
    deps.batches.dropRefused(tx, b.id, b.hash)
    return storeAlone(deps, tx, b, manifest, payloadRef)
  })
}

/** Stores batch `b` in `tx` as storeReceivedBatch does, its pins left to the walk; answers its first waiting pin. */
function storeAlone(deps: AggregatorDeps, tx: Tx, b: BatchPayload, manifest: string, payloadRef: string): number | undefined {
  storeReceivedBatch(deps, tx, b, manifest, payloadRef)
  return deps.pins.minUndispatchedSeqOfBatch(b.id, b.hash, tx)
}
