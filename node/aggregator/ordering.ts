import { broadcastContext } from '../core/hashes.js'
import type { Hash } from '../core/ids.js'
import type { Tx } from '../db/database.js'
import { batchTypeOf, broadcastPinOfPrivate, TAG_IDENTITY_CLAIM, type BatchRecord, type Message, type Pin, type Wait } from '../model/index.js'
import type { StandingQueues } from './standing.js'
import type { PrivateChecks } from './private-check.js'

/**
 * Where the ordering checks leave a message: free to be decided by its own checks (`open`; a broadcast's contexts, a
 * private message's `advance` of its nonces), held back by an earlier message (`wait`), never orderable (`reject`),
 * or not orderable on this node at all (`unordered`: a private message where private messaging is not set up).
 */
export type Ordering =
  | { kind: 'open'; contexts?: Hash[]; advance?: (tx: Tx) => void }
  | { kind: 'wait'; wait: Wait }
  | { kind: 'reject'; reason: string }
  | { kind: 'unordered' }

/**
 * The checks that place a message in the chain's order, which a pass runs before the message's own (Pass.decide):
 * nothing overtakes on a topic. A broadcast waits while an earlier pin of one of its contexts waits (the context
 * queues, in memory); a private message while its pins are not the next nonces of its author on its topics in its
 * group, or its group is not known (PrivateChecks). A message in a batch of the other type, or a broadcast pinned as
 * private, can never be ordered with the others and is refused alike everywhere.
 *
 * It only reads: a pass runs it inside its transaction (`tx`); a trace runs it between passes (no `tx`), against the
 * same queues and tables, so a trace's "blocked behind" is this very check, not a copy of it. `pins`: the batch's
 * pins by index; `range`: the message's; `firstSeq`: the sequence of its first pin, which orders it.
 */
export function orderingOf(
  message: Message,
  batch: BatchRecord,
  pins: ReadonlyMap<number, Pin>,
  range: { from: number; to: number },
  firstSeq: number,
  queues: StandingQueues,
  checks: PrivateChecks | undefined,
  tx?: Tx,
): Ordering {
  const type = batchTypeOf(message)
  if (type !== batch.type) {
    // A private message published in a broadcast batch (anyone could read it, and plant a group on every member), or
    // a broadcast one delivered privately: refused alike everywhere; its pins are used and its topics move on. (The
    // fetcher and the private receiver refuse such batches whole; this holds for any batch that reaches a pass.)
    return { kind: 'reject', reason: `a ${message.header.type} message cannot travel in a ${batch.type} batch` }
  }
  if (type === 'private') {
    // Masked pins: each is unique, so order comes from the next expected nonce per (context, author), not the queues.
    if (!checks) return { kind: 'unordered' }
    const chainPins: (Pin | undefined)[] = []
    for (let i = range.from; i <= range.to; i++) {
      const pin = pins.get(i)
      // A pin naming a payload reference is a broadcast pin: it decides only what is fetched from there, which is never
      // a private batch (batch-fetcher.ts). Came before the batch's own pin on chain, it took the index (a signer's second
      // pin of a pair is not stored), and the message waits for good, on every member: whether it holds the batch or
      // not, or that payload was refused (its pins used) before or after the batch came.
      if (pin && broadcastPinOfPrivate(pin, type)) return { kind: 'wait', wait: { reason: 'pin', topic: message.header.topics[i - range.from]!, detail: `the pin at its place on chain is a broadcast pin of its batch (it names a payload reference), signed by the batch's key before its private pin; a broadcast pin decides no private message` } }
      chainPins.push(pin)
    }
    const pc = checks.check(tx, message, batch, chainPins)
    return pc.kind === 'ok' ? { kind: 'open', advance: pc.advance } : pc
  }
  // Nothing overtakes on a topic: no context of the message may have an earlier pin still waiting that holds it (a
  // member's, or an undetermined one's; a stranger's holds only identity claims back: standing.ts).
  const contexts = message.header.topics.map((t) => broadcastContext(t))
  const claim = message.header.type === 'definition' && message.header.tag === TAG_IDENTITY_CLAIM
  const held = contexts.findIndex((c) => queues.earlierWaiting(c, firstSeq, claim))
  if (held >= 0) return { kind: 'wait', wait: { reason: 'blocked', by: 'topic', topic: message.header.topics[held]!, context: contexts[held]!, blocker: queues.first(contexts[held]!, claim)! } }
  // Pinned as private (no payload reference), its pins are not in the queues, so it could not hold its topics:
  // it cannot be ordered with them, and every member refuses it alike.
  let masked = false
  for (let i = range.from; i <= range.to; i++) masked ||= pins.get(i)?.masked === true
  if (masked) return { kind: 'reject', reason: 'its batch was pinned on chain as a private batch (no payload reference)' }
  return { kind: 'open', contexts }
}
