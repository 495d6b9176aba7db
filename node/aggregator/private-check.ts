import { parsePin, privateContext, privatePin } from '../core/hashes.js'
import { errorMessage } from '../core/errors.js'
import type { Hash } from '../core/ids.js'
import type { Tx } from '../db/database.js'
import type { NextPinsRepo } from '../db/repos/nextpins.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { BatchRecord, Message, Pin, Wait } from '../model/index.js'

/**
 * What the masked-pin check says of a private message (or groupinit): its pins are the next expected ones, so the
 * message may be decided (`advance` moves its sequences on, called when it is confirmed or rejected); or it must
 * wait (an earlier nonce of its author on one of its topics in its group is not settled, or its group is not known
 * here yet); or it is refused (its pins contradict the chain or its own nonces, or its author is not in its group).
 */
export type PrivateOutcome = { kind: 'ok'; advance: (tx: Tx) => void } | { kind: 'reject'; reason: string } | { kind: 'wait'; wait: Wait }

/**
 * FireFly's masked ordering (aggregator.go `checkMaskedContextReady`, nextpins), per (context, author): a private
 * message with topics t1..tn in group g carries pins "<hex>:<nonce>"; each hex must be `privatePin(ti, g, author,
 * nonce)`, the pin on chain at its index must be that hash, and the nonce must be the next one this member expects
 * for (privateContext(ti, g), author). A later nonce waits (its predecessor has not been settled: a missing delivery
 * holds exactly its own topic in its own group, from its own author); an earlier one was used already and is
 * refused. A pin on chain twice (two batches of the author carrying it) is decided by its first: a later one waits
 * while the first's batch is not here, so no member decides it by whichever batch happened to arrive first. A member outside the group never sees the batch, so its pins simply stay unread there.
 */
export class PrivateChecks {
  constructor(private readonly deps: { nextpins: NextPinsRepo; pins: PinsRepo; groups: GroupsRepo; identities: IdentitiesRepo }) {}

  /** `chainPins[i]`: the pin on chain for the message's i-th topic. Reads only, inside `tx` when given. */
  check(tx: Tx | undefined, message: Message, batch: BatchRecord, chainPins: readonly (Pin | undefined)[]): PrivateOutcome {
    const h = message.header
    const group = h.group as Hash | undefined
    if (!group) return { kind: 'reject', reason: `private message ${h.id} names no group` }
    if (!message.pins || message.pins.length !== h.topics.length) return { kind: 'reject', reason: `it carries ${message.pins?.length ?? 0} pins for ${h.topics.length} topics` }
    const advance: { context: Hash; nonce: number }[] = []
    for (let i = 0; i < h.topics.length; i++) {
      const topic = h.topics[i]!
      let pin: { hash: Hash; nonce: number }
      try {
        pin = parsePin(message.pins[i]!)
      } catch (err) {
        return { kind: 'reject', reason: errorMessage(err) }
      }
      const expected = privatePin(topic, group, h.author, pin.nonce)
      if (pin.hash !== expected) return { kind: 'reject', reason: `pin ${i} (${pin.hash}) is not the pin of topic ${topic} at nonce ${pin.nonce} for ${h.author} in its group` }
      const onChain = chainPins[i]
      if (!onChain) return { kind: 'wait', wait: { reason: 'pin', topic } }
      if (onChain.hash !== expected) return { kind: 'reject', reason: `the pin on chain for topic ${topic} (${onChain.hash}) is not the message's pin ${expected}` }
      const context = privateContext(topic, group)
      const next = this.deps.nextpins.next(context, h.author, tx)
      if (pin.nonce < next) return { kind: 'reject', reason: `nonce ${pin.nonce} on topic ${topic} was already used by ${h.author} in this group (next is ${next})` }
      // An earlier message of the author on this topic in this group (nonce `next`) is not here or not settled yet.
      if (pin.nonce > next) return { kind: 'wait', wait: { reason: 'blocked', by: 'nonce', topic, group, author: h.author, nonce: next } }
      // The same pin may be on chain twice, for two batches of its author (the message sent again, or another message
      // at this nonce): the first pinned decides, whichever batch arrived first here. Its batch not here (or not
      // decided yet) holds this one back, as a broadcast pin holds its topic; decided, it took the nonce. A batch of
      // another key or another group counts as never here, on its holders too: only some members could hold it. Only
      // a pin its signer pinned before (`repeated`) can have such a first: the others cost no read.
      const first = onChain.repeated ? this.deps.pins.firstPrivate(expected, onChain.signer, group, tx) : undefined
      if (first !== undefined && first.pin.seq < onChain.seq) {
        if (!first.held || !first.pin.dispatched) return { kind: 'wait', wait: { reason: 'blocked', by: 'topic', topic, context: expected, blocker: first.pin.seq } }
        return { kind: 'reject', reason: `nonce ${pin.nonce} on topic ${topic} was taken by batch ${first.pin.batchId}, pinned before it with the same pin` }
      }
      advance.push({ context, nonce: pin.nonce })
    }
    // The groupinit defines its group (its handler checks and stores it); any other message needs the group here.
    if (h.type !== 'groupinit') {
      const g = this.deps.groups.byHash(group, tx)
      // Its group is not known here yet: its groupinit is not confirmed.
      if (!g) return { kind: 'wait', wait: { reason: 'blocked', by: 'group', group } }
      const node = batch.node ? this.deps.identities.byDid(batch.node, tx) : undefined
      if (!g.members.some((m) => m.identity === h.author && (node === undefined || m.node === node.id))) {
        return { kind: 'reject', reason: `its author ${h.author}${batch.node ? ` on ${batch.node}` : ''} is not a member of group ${group}` }
      }
    }
    return {
      kind: 'ok',
      advance: (t) => {
        for (const a of advance) this.deps.nextpins.advance(t, a.context, h.author, a.nonce)
      },
    }
  }
}
