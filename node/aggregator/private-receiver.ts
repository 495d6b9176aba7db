import { ParleyError } from '../core/errors.js'
import type { BatchId, Hash } from '../core/ids.js'
import type { Database, Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { DataRepo } from '../db/repos/data.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import { checkBatch } from '../batch/verify.js'
import { storeReceivedBatch } from './store-batch.js'
import { parseGroupinit } from '../identity/groupinit.js'
import { orgDid, TAG_DEFINE_GROUP, type BatchPayload, type Group, type LocalIdentity } from '../model/index.js'
import type { Peer } from '../exchange/index.js'

export interface PrivateReceiverDeps {
  db: Database
  batches: BatchesRepo
  messages: MessagesRepo
  data: DataRepo
  groups: GroupsRepo
  identities: IdentitiesRepo
  self: LocalIdentity
  /** Told once a batch is stored, so that the aggregator walks its pins again (whichever came second). */
  arrived: (batchId: BatchId) => void
}

const refuse = (msg: string): never => {
  throw new ParleyError('BAD_PEER_DATA', msg)
}

/** Not knowable yet here (a groupinit still on its way, our own registration not seen yet): the peer sends again later. */
const notYet = (msg: string): never => {
  throw new ParleyError('UNAVAILABLE', msg)
}

/**
 * The exchange's batch handler (FireFly's `dx_callbacks.go` private batch path): a batch from a peer is stored only
 * when the peer's org is the batch's author, the batch is private, its group is known here (or defined by a groupinit
 * in the batch, or by one already received), this node and the author's node are members of it, and it verifies as
 * a broadcast does (manifest hash, every message and data hash). Then the batch, its messages (pending) and data are
 * stored in one transaction and the aggregator is told. The same batch again resolves. What cannot be known here yet
 * (its group, defined by a groupinit in a batch still on its way; this node's own registration) is UNAVAILABLE, which
 * the peer retries: batches of one group travel independently. Anything else is refused with BAD_PEER_DATA (the
 * exchange answers 400 and logs it, and the peer gives up) and nothing is stored.
 */
export class PrivateReceiver {
  constructor(private readonly deps: PrivateReceiverDeps) {}

  readonly handle = async (from: Peer, b: BatchPayload): Promise<void> => {
    const stored = await this.deps.db.transaction((tx) => this.check(tx, from, b))
    if (stored) this.deps.arrived(b.id)
  }

  /** Checks and stores in one transaction; answers whether something new was stored. */
  private check(tx: Tx, from: Peer, b: BatchPayload): boolean {
    const { batches, identities, self } = this.deps
    if (b.type !== 'private') refuse(`batch ${b.id} is a ${b.type} batch; only private batches travel peer to peer`)
    if (b.author !== orgDid(from.org)) refuse(`batch ${b.id} is authored by ${b.author}, but was sent by a node of ${orgDid(from.org)}`)
    if (b.node !== undefined && b.node !== from.node) refuse(`batch ${b.id} names node ${b.node}, but was sent by ${from.node}`)
    const checked = checkBatch(b, { batchId: b.id, batchHash: b.hash, txId: b.tx.id })
    if (!checked.ok) refuse(`batch ${b.id} does not verify: ${checked.reason}`)
    const held = batches.get(b.id, tx)
    if (held) {
      if (held.hash === b.hash && held.state !== 'refused') return false
      refuse(held.hash === b.hash ? `batch ${b.id} was refused here before` : `batch ${b.id} is already held with hash ${held.hash}, this one has ${b.hash}`)
    }
    const groupHash = b.group
    if (!groupHash) refuse(`private batch ${b.id} names no group`)
    for (const m of b.messages) {
      if (m.header.type !== 'private' && m.header.type !== 'groupinit') refuse(`message ${m.header.id} of private batch ${b.id} is of type ${m.header.type}`)
      if (m.header.group !== groupHash) refuse(`message ${m.header.id} is for group ${m.header.group ?? '(none)'}, its batch for ${groupHash}`)
      if (!m.pins || m.pins.length !== m.header.topics.length) refuse(`message ${m.header.id} carries ${m.pins?.length ?? 0} pins for ${m.header.topics.length} topics`)
      // Two pins of one message on one context could never both be the next nonce: the topic would wait forever.
      if (new Set(m.header.topics).size !== m.header.topics.length) refuse(`message ${m.header.id} names the same topic twice`)
    }
    const group = this.groupOf(tx, b, groupHash!)
    if (group.namespace !== b.namespace) refuse(`batch ${b.id} is in namespace ${b.namespace}, its group ${groupHash} in ${group.namespace}`)
    const selfNode = identities.byDid(self.nodeDid, tx)
    if (!selfNode) notYet(`this node's own registration (${self.nodeDid}) is not confirmed here yet`)
    if (!group.members.some((m) => m.node === selfNode!.id)) refuse(`this node is not a member of group ${groupHash}`)
    const senderNode = identities.byDid(from.node, tx)
    if (!senderNode || !group.members.some((m) => m.identity === b.author && m.node === senderNode.id)) refuse(`the author ${b.author} on ${from.node} is not a member of group ${groupHash}`)
    const conflict = storeReceivedBatch(this.deps, tx, b, checked.ok ? checked.manifest : '', '')
    if (conflict !== undefined) refuse(`batch ${b.id}: ${conflict}`)
    return true
  }

  /** The group stored here, else the one a groupinit in the batch (or one received earlier) defines. */
  private groupOf(tx: Tx, b: BatchPayload, hash: Hash): Group {
    const stored = this.deps.groups.byHash(hash, tx)
    if (stored) return stored
    const inBatch = b.messages.find((m) => m.header.type === 'groupinit')
    let value: string | null | undefined
    if (inBatch) {
      if (inBatch.header.tag !== TAG_DEFINE_GROUP) refuse(`groupinit ${inBatch.header.id} has tag ${inBatch.header.tag ?? '(none)'}`)
      value = b.data.find((d) => d.id === inBatch.data[0]?.id)?.value
    } else {
      const earlier = this.deps.messages.groupinitOf(hash, tx)
      if (!earlier) notYet(`group ${hash} is not known here yet: the batch defining it has not arrived`)
      const dataId = earlier!.data[0]?.id
      value = dataId === undefined ? undefined : this.deps.data.get(dataId, tx)?.value
    }
    const parsed = parseGroupinit(value, hash, b.namespace)
    if (!parsed.ok) refuse(`group ${hash}: ${parsed.reason}`)
    return (parsed as { group: Group }).group
  }
}
