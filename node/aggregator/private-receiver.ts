import { errorMessage, isParleyError, ParleyError } from '../core/errors.js'
import { now } from '../core/time.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { DataValidator } from '../data/validator.js'
import { messageLimitProblem } from '../batch/payload.js'
import type { BatchId, Hash } from '../core/ids.js'
import type { Database, Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { DataRepo } from '../db/repos/data.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import { checkBatch } from '../batch/verify.js'
import { storeReceivedBatch } from './store-batch.js'
import type { RecentBatches } from './recent-batches.js'
import { parseGroupinit } from '../identity/groupinit.js'
import { orgDid, TAG_DEFINE_GROUP, type BatchPayload, type Group, type LocalIdentity, type Message, type NewEvent, type NodeEvent } from '../model/index.js'
import type { Peer } from '../exchange/index.js'
import { isVerdict } from './pass.js'
import { batchCharge, type BatchRelease, type UnpinnedBatchQuota } from './unpinned-quota.js'
import type { PinsRepo } from '../db/repos/pins.js'

export interface PrivateReceiverDeps {
  db: Database
  batches: BatchesRepo
  messages: MessagesRepo
  data: DataRepo
  groups: GroupsRepo
  identities: IdentitiesRepo
  self: LocalIdentity
  /** Told once a batch is stored, so that the aggregator walks its pins again (whichever came second). */
  arrived: (batchId: BatchId, batchHash: Hash) => void
  /** Where a stored batch is kept for the aggregator's first walk of it (see storeReceivedBatch). */
  recent?: RecentBatches
  /**
   * Unpinned batches: their messages are decided on arrival (no pin orders them), so the receiver needs the blobs
   * held here, the datatypes, and the event log (`published` told of what it wrote once committed). Without them,
   * unpinned batches are refused.
   */
  unpinned?: { blobs: BlobsRepo; validator: DataValidator; events: EventsRepo; published: (written: NodeEvent[]) => void }
  /**
   * The quota on batches to be pinned that no pin names yet (`quotas.unpinnedBatchBytesPerOrg`), and the pins that
   * tell whether a batch's own pin came first. Without it, such batches are not counted.
   */
  quota?: { batches: UnpinnedBatchQuota; pins: PinsRepo }
}

/** The decision on each message of an unpinned batch, by message id: a rejection's reason, or undefined to confirm. */
type Verdicts = Map<string, string | undefined>

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
 * stored in one transaction and the aggregator is told; an unpinned batch's messages are decided in that transaction
 * instead (all of these checks come before its data is validated), but for one decided already, which stays as it is.
 * The same batch again resolves. What cannot be known here yet (its group, defined by a groupinit in a batch still on
 * its way; this node's own registration) is UNAVAILABLE, which the peer retries: batches of one group travel
 * independently. A batch to be pinned that would take its org past its quota of batches no pin names yet is refused
 * STORAGE_FULL (507; unpinned-quota.ts), which the peer also retries. Anything else is refused with BAD_PEER_DATA (the
 * exchange answers 400 and logs it, and the peer gives up) and nothing is stored.
 */
export class PrivateReceiver {
  constructor(private readonly deps: PrivateReceiverDeps) {}

  /** Before a batch's body is read: refused STORAGE_FULL while its org has no room for any batch (unpinned-quota.ts). */
  readonly admit = (from: Peer): void => {
    this.deps.quota?.batches.admit(from.org)
  }

  readonly handle = async (from: Peer, b: BatchPayload): Promise<void> => {
    let manifest: string | undefined
    let verdicts: Verdicts | undefined
    if (b.tx.type === 'unpinned') {
      // Its data is validated before its transaction, which may cost far more than sending it did (a value of megabytes
      // under a datatype): the batch is checked in full first, so one refused, not takeable yet, or held already costs
      // no validation. One held already still goes through the transaction below, which answers only once the commit
      // that stored it is durable (a resend may come while the first delivery's commit is being written).
      manifest = this.check(undefined, from, b)
      if (manifest !== undefined) verdicts = await this.checkData(b)
    }
    let written: NodeEvent[] = []
    let release: BatchRelease | undefined
    let stored: boolean
    try {
      stored = await this.deps.db.transaction((tx) => {
        // Checked again here, reading what is held now: another delivery of it, or of its group, may have come meanwhile.
        const checked = this.check(tx, from, b, manifest)
        if (checked === undefined) return false
        if (!verdicts) release = this.charge(tx, from, b, checked)
        const held = this.store(tx, b, checked)
        if (verdicts) written = this.decideUnpinned(tx, b, verdicts, held)
        return true
      })
    } catch (err) {
      release?.()
      throw err
    }
    if (!stored) return
    if (verdicts) this.deps.unpinned!.published(written)
    else this.deps.arrived(b.id, b.hash)
  }

  /**
   * Counts a batch to be pinned against its org's quota of batches no pin names yet, unless its own key's private pin
   * is here already (read in `tx`: a pin read after it reaches the quota as `pinned`); throws STORAGE_FULL when over,
   * before anything is stored. Answers what gives the share back if the transaction fails.
   */
  private charge(tx: Tx, from: Peer, b: BatchPayload, manifest: string): BatchRelease | undefined {
    const quota = this.deps.quota
    if (!quota) return undefined
    // Read first: a batch whose pin is here already does not count, even when its org is at the quota.
    if (quota.pins.pinnedPrivately(b.id, b.hash, b.key, tx)) return undefined
    return quota.batches.reserve(from.org, { id: b.id, hash: b.hash, key: b.key }, batchCharge(manifest, b.data))
  }

  /**
   * The datatype checks of an unpinned batch's messages, before its transaction (they may run off the main thread):
   * a verdict about the data rejects its message; this node's own trouble checking is UNAVAILABLE (sent again later).
   */
  private async checkData(b: BatchPayload): Promise<Verdicts> {
    // check() refused the batch already when this node takes no unpinned batches.
    const { validator } = this.deps.unpinned!
    const byId = new Map(b.data.map((d) => [d.id as string, d]))
    const out: Verdicts = new Map()
    for (const m of b.messages) {
      const limit = messageLimitProblem(m)
      if (limit) {
        out.set(m.header.id, limit)
        continue
      }
      try {
        await validator.validateAll(b.namespace, m.data.flatMap((r) => byId.get(r.id) ?? []))
        out.set(m.header.id, undefined)
      } catch (err) {
        if (!isVerdict(err)) notYet(`message ${m.header.id}: its data could not be checked here yet: ${errorMessage(err)}`)
        // Unpinned, nothing orders it after the datatype's definition, which travels pinned and may not be here yet:
        // the sender delivers again later, rather than this member rejecting what the sender accepted.
        if (isParleyError(err, 'UNKNOWN_DATATYPE')) notYet(`message ${m.header.id}: ${errorMessage(err)} (yet)`)
        out.set(m.header.id, errorMessage(err))
      }
    }
    return out
  }

  /**
   * FireFly's unpinned path: each message of a stored unpinned batch is confirmed (or rejected, on a verdict about its
   * data) at once, in batch order, with its event; no pin, no nonce. `held`: what storeReceivedBatch answered.
   * Each (id, hash) is decided on its own: another message held here under its id, with other content, changes nothing
   * of its verdict (nothing orders unpinned messages among members, so a verdict that depended on it would not agree).
   */
  private decideUnpinned(tx: Tx, b: BatchPayload, verdicts: Verdicts, held: ReadonlyMap<string, Message> | undefined): NodeEvent[] {
    const at = now()
    const events: NewEvent[] = []
    const confirmed = []
    for (const m of b.messages) {
      // Its author sent it before, in another batch, and it was decided then: it keeps that decision, its batch and its
      // one event (a pinned message held settled is skipped as well, by the aggregator's pass).
      if (held && held.get(m.header.id)?.state !== 'pending') continue
      const reason = verdicts.get(m.header.id)
      const common = { namespace: m.header.namespace, reference: m.header.id, referenceHash: m.hash, tx: b.tx.id, topic: m.header.topics[0]!, ...(m.header.cid ? { correlator: m.header.cid } : {}) }
      if (reason === undefined) {
        confirmed.push({ id: m.header.id, hash: m.hash })
        events.push({ type: 'message_confirmed', ...common })
      } else {
        this.deps.messages.reject(tx, { id: m.header.id, hash: m.hash }, b.id, b.tx.id, at, reason)
        events.push({ type: 'message_rejected', ...common })
      }
    }
    if (confirmed.length > 0) this.deps.messages.confirmMany(tx, confirmed, b.id, b.tx.id, at)
    return events.length > 0 ? this.deps.unpinned!.events.insertMany(tx, events, at) : []
  }

  /**
   * Every check of a batch, reading inside `tx` when given (nothing is written): answers its manifest, or undefined
   * when it is held here already. `verified`: the manifest an earlier check of this same payload answered, so that
   * its hashes are not computed again.
   */
  private check(tx: Tx | undefined, from: Peer, b: BatchPayload, verified?: string): string | undefined {
    const { batches, identities, self } = this.deps
    if (b.type !== 'private') refuse(`batch ${b.id} is a ${b.type} batch; only private batches travel peer to peer`)
    if (b.author !== orgDid(from.org)) refuse(`batch ${b.id} is authored by ${b.author}, but was sent by a node of ${orgDid(from.org)}`)
    if (b.node !== undefined && b.node !== from.node) refuse(`batch ${b.id} names node ${b.node}, but was sent by ${from.node}`)
    // A batch delivered again (its acknowledgement was lost) is held verified already: not hashed again. Batches are
    // known by (id, hash): another batch under the same id (a broadcast's, another member's) is kept apart from it, so
    // a batch delivered under an id this member has not fetched yet cannot stand for the real one.
    const held = batches.byIdHash(b.id, b.hash, tx)
    // A refusal is the fetcher's verdict on one pin event's payload (whoever signed it, its author included: a broadcast
    // pin of the pair naming a payload that is no broadcast batch of it). It says nothing of a private batch delivered
    // with that pair, which replaces it (store): a member that fetched that payload first ends as one that held the batch.
    if (held && held.state !== 'refused') return undefined
    const unpinned = b.tx.type === 'unpinned'
    if (unpinned && !this.deps.unpinned) refuse(`batch ${b.id} is unpinned, and this node takes no unpinned batches`)
    const manifest = verified ?? this.verify(b)
    const groupHash = b.group ?? refuse(`private batch ${b.id} names no group`)
    // An unpinned message is confirmed on arrival: its group must be known here already (its groupinit, pinned, is
    // confirmed), and its blobs held (they are sent before the batch). Until then the peer sends it again.
    const group = unpinned ? this.deps.groups.byHash(groupHash, tx) ?? notYet(`group ${groupHash} is not known here yet: its groupinit is not confirmed`) : this.groupOf(tx, b, groupHash)
    if (unpinned) {
      for (const d of b.data) if (d.blob && !this.deps.unpinned!.blobs.has(d.blob.hash, tx)) notYet(`blob ${d.blob.hash} of data ${d.id} is not here yet`)
    }
    if (group.namespace !== b.namespace) refuse(`batch ${b.id} is in namespace ${b.namespace}, its group ${groupHash} in ${group.namespace}`)
    const selfNode = identities.byDid(self.nodeDid, tx)
    if (!selfNode) notYet(`this node's own registration (${self.nodeDid}) is not confirmed here yet`)
    if (!group.members.some((m) => m.node === selfNode!.id)) refuse(`this node is not a member of group ${groupHash}`)
    const senderNode = identities.byDid(from.node, tx)
    if (!senderNode || !group.members.some((m) => m.identity === b.author && m.node === senderNode.id)) refuse(`the author ${b.author} on ${from.node} is not a member of group ${groupHash}`)
    return manifest
  }

  /**
   * What a private batch must be whatever this node holds (its manifest hash, every message and data hash, one group
   * and one kind of transaction throughout, pins as its kind needs): answers its manifest. Reads nothing.
   */
  private verify(b: BatchPayload): string {
    const checked = checkBatch(b, { batchId: b.id, batchHash: b.hash, txId: b.tx.id })
    if (!checked.ok) refuse(`batch ${b.id} does not verify: ${checked.reason}`)
    const groupHash = b.group ?? refuse(`private batch ${b.id} names no group`)
    const unpinned = b.tx.type === 'unpinned'
    for (const m of b.messages) {
      if (m.header.type !== 'private' && m.header.type !== 'groupinit') refuse(`message ${m.header.id} of private batch ${b.id} is of type ${m.header.type}`)
      if (m.header.group !== groupHash) refuse(`message ${m.header.id} is for group ${m.header.group ?? '(none)'}, its batch for ${groupHash}`)
      // One batch is either pinned or not: an unpinned message must not ride a pinned batch, nor the reverse.
      if ((m.header.txtype === 'none') !== unpinned) refuse(`message ${m.header.id} has txtype ${m.header.txtype}, its batch is ${b.tx.type}`)
      if (unpinned) {
        if (m.header.type !== 'private') refuse(`a ${m.header.type} message cannot travel unpinned`)
        if (m.pins && m.pins.length > 0) refuse(`unpinned message ${m.header.id} carries pins`)
        continue
      }
      if (!m.pins || m.pins.length !== m.header.topics.length) refuse(`message ${m.header.id} carries ${m.pins?.length ?? 0} pins for ${m.header.topics.length} topics`)
      // Two pins of one message on one context could never both be the next nonce: the topic would wait forever.
      if (new Set(m.header.topics).size !== m.header.topics.length) refuse(`message ${m.header.id} names the same topic twice`)
    }
    return checked.ok ? checked.manifest : ''
  }

  /** Stores a checked batch; answers what storeReceivedBatch does. */
  private store(tx: Tx, b: BatchPayload, manifest: string): ReadonlyMap<string, Message> | undefined {
    try {
      this.deps.batches.dropRefused(tx, b.id, b.hash)
      return storeReceivedBatch(this.deps, tx, b, manifest, '')
    } catch (err) {
      if (isParleyError(err, 'BAD_PEER_DATA')) refuse(`batch ${b.id}: ${err.message}`)
      throw err
    }
  }

  /** The group stored here, else the one a groupinit in the batch (or one received earlier) defines. */
  private groupOf(tx: Tx | undefined, b: BatchPayload, hash: Hash): Group {
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
      const ref = earlier!.data[0]
      value = ref === undefined ? undefined : this.deps.data.byRef(ref, tx)?.value
    }
    const parsed = parseGroupinit(value, hash, b.namespace)
    if (!parsed.ok) refuse(`group ${hash}: ${parsed.reason}`)
    return (parsed as { group: Group }).group
  }
}
