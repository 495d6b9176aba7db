import { privatePin } from '../core/hashes.js'
import type { Hash } from '../core/ids.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { BlockchainEventsRepo } from '../db/repos/blockchain-events.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { Timestamp } from '../core/time.js'
import { broadcastPinOfPrivate, type BatchRecord, type Blocker, type Message, type Pin, type Wait, type Waiting } from '../model/index.js'
import { IndexedManifest } from './manifest.js'

export interface ExplainDeps {
  pins: PinsRepo
  batches: BatchesRepo
  messages: MessagesRepo
  blockchainEvents: BlockchainEventsRepo
  identities: IdentitiesRepo
  groups: GroupsRepo
  /** The aggregator's own reason for a message of a batch stored here (Aggregator.explain), if something holds it. */
  explain: (message: Message, batch: BatchRecord) => { wait: Wait; at?: Timestamp } | undefined
}

/**
 * Words and fields for a reason the aggregator's checks give for not deciding a message (a Wait: see
 * Aggregator.explain), with what the message waits behind named as far as this member knows it: the
 * blocking message (by id once its batch is here, else by its batch once its pin was read), and where what is
 * missing comes from (shared storage, or which peer). It only reads: the rules are the checks' (pass.ts,
 * private-check.ts, the definition handlers), and nothing here decides anything again.
 *
 * `batch`: the waiting message's own batch (where a private blob comes from).
 */
export function explainWait(deps: ExplainDeps, wait: Wait, batch?: BatchRecord): Waiting {
  return new Explainer(deps).explain(wait, batch, true)
}

class Explainer {
  constructor(private readonly deps: ExplainDeps) {}

  /** `nested`: whether a blocker that waits itself may be explained too (one level: a chain is told link by link). */
  explain(wait: Wait, batch: BatchRecord | undefined, nested: boolean): Waiting {
    switch (wait.reason) {
      case 'pin':
        return { reason: 'pin', topic: wait.topic, detail: wait.detail ? `topic ${wait.topic}: ${wait.detail}` : `its batch is here, but its pin for topic ${wait.topic} has not been read from the chain here yet` }
      case 'batch':
        return { reason: 'batch', detail: wait.detail }
      case 'blob': {
        if (wait.cid) return { reason: 'blob', blob: wait.blob, cid: wait.cid, detail: `its blob ${wait.blob} is being fetched from shared storage (${wait.cid}) and checked` }
        const from = batch?.type === 'private' && batch.node ? this.node(batch.node) : undefined
        return {
          reason: 'blob',
          blob: wait.blob,
          ...(from ? { peer: from.peer, org: from.org } : {}),
          detail: `its blob ${wait.blob} is not held here yet${from ? `: ${from.peer} (${from.org}) sends it` : ''}`,
        }
      }
      case 'datatype': {
        const name = wait.datatype ? `${wait.datatype.name}/${wait.datatype.version}` : undefined
        return { reason: 'datatype', ...(wait.datatype ? { datatype: wait.datatype } : {}), detail: name ? `datatype ${name}: ${wait.detail}` : wait.detail }
      }
      case 'identity':
        return { reason: 'identity', author: wait.author, detail: wait.detail ?? `the identity claim of ${wait.author}, ordered before this message, is not applied here yet` }
      case 'blocked':
        if (wait.by === 'topic') return this.behindPin(wait.topic, wait.blocker, nested)
        if (wait.by === 'nonce') return this.behindNonce(wait.topic, wait.group, wait.author, wait.nonce, nested)
        return this.behindGroup(wait.group, nested)
    }
  }

  /** Broadcast: the first waiting pin of the topic's context, and the message (or batch) behind it. */
  private behindPin(topic: string, seq: number, nested: boolean): Waiting {
    const pin = this.deps.pins.bySeq(seq)
    // A private pin held back by an earlier copy of itself (same signer and hash) whose batch counts as never here
    // (another key's or another group's, private-check.ts): that copy being decided where its batch is held frees
    // nothing, so the message waits for good, as on the members outside that batch's group.
    if (pin?.dispatched && pin.masked) {
      return { reason: 'blocked', topic, blockedBy: { author: this.didOfKey(pin.signer), topic, batch: pin.batchId }, detail: `an earlier copy of its pin on topic ${topic}, signed by ${pin.signer}, names batch ${pin.batchId}, which is not its author's batch of this group: it counts as never here on every member, so this message waits for good` }
    }
    if (!pin || pin.dispatched) return { reason: 'blocked', topic, detail: `an earlier pin on topic ${topic} held it back; it has been decided since, so the aggregator decides this message at its next walk` }
    const { batch, message } = this.atPin(pin)
    const author = message?.header.author ?? this.didOfKey(pin.signer)
    const blockedBy: Blocker = { ...(message ? { message: message.header.id } : {}), author, topic, batch: pin.batchId }
    const head = `blocked behind ${message ? `message ${message.header.id}` : `a message of batch ${pin.batchId}`} of ${author} on topic ${topic}, pinned before it${this.blockOf(pin)}`
    if (message) return { reason: 'blocked', topic, blockedBy, detail: head + this.ownWait(message, batch, nested) }
    if (batch?.state === 'refused') return { reason: 'blocked', topic, blockedBy, detail: `${head}: its batch was refused here (${batch.reason ?? 'it did not verify'})` }
    const cid = this.deps.blockchainEvents.byIds([pin.eventId]).get(pin.eventId)?.payloadRef
    // An unregistered account's pin holds a topic only while an earlier pin of its own is undecided (standing.ts).
    const standing = author === pin.signer ? `; ${pin.signer} is no member's key here, and holds the topic while an earlier pin it signed (which may be its registration claim) is undecided` : ''
    return { reason: 'blocked', topic, blockedBy, ...(cid ? { cid } : {}), detail: `${head}: its batch is not here yet${cid ? `; it is being fetched from shared storage (${cid})` : ''}${standing}` }
  }

  /** Private: the author's message with the next expected nonce on the topic in the group. */
  private behindNonce(topic: string, group: Hash, author: string, nonce: number, nested: boolean): Waiting {
    const hash = privatePin(topic, group, author, nonce)
    const pin = this.deps.pins.firstOfHash(hash)
    const message = (pin ? this.atPin(pin).message : undefined) ?? this.deps.messages.withPin(group, hash)
    const batch = pin?.batchId ?? message?.batch
    const blockedBy: Blocker = { ...(message ? { message: message.header.id } : {}), author, nonce, topic, ...(batch ? { batch } : {}) }
    const head = `blocked behind ${message ? `message ${message.header.id}` : 'the message'} of ${author} with nonce ${nonce} on topic ${topic} in group ${group}`
    if (message) {
      const own = pin ? this.ownWait(message, message.batch ? this.deps.batches.carrying(message.batch, message.header.id, message.hash) : undefined, nested) : ', which is here but whose pin has not been read from the chain yet'
      return { reason: 'blocked', topic, blockedBy, detail: head + own }
    }
    const from = this.memberNode(group, author)
    const peer = from ? { peer: from.peer, org: from.org } : {}
    const sender = from ? ` from ${from.peer} (${from.org})` : ''
    if (pin) return { reason: 'blocked', topic, blockedBy, ...peer, detail: `${head}: its pin was read (batch ${pin.batchId}${this.blockOf(pin, ', ')}), but its batch has not been delivered here${sender} yet` }
    return { reason: 'blocked', topic, blockedBy, ...peer, detail: `${head}: neither its batch${sender} nor its pin has reached this member yet` }
  }

  /** Private: the group is not known here; its groupinit is the message everything in the group waits behind. */
  private behindGroup(group: Hash, nested: boolean): Waiting {
    const init = this.deps.messages.groupinitOf(group)
    if (!init) return { reason: 'blocked', detail: `its group ${group} is not known here yet: the groupinit defining it has not arrived` }
    const topic = init.header.topics[0] ?? group
    const blockedBy: Blocker = { message: init.header.id, author: init.header.author, topic, ...(init.batch ? { batch: init.batch } : {}) }
    const own = this.ownWait(init, init.batch ? this.deps.batches.carrying(init.batch, init.header.id, init.hash) : undefined, nested)
    return { reason: 'blocked', topic, blockedBy, detail: `its group ${group} is not known here yet: blocked behind its groupinit ${init.header.id} of ${init.header.author}, not confirmed yet${own}` }
  }

  /** The blocking message's own reason, when it waits itself and a pass found why. */
  private ownWait(message: Message, batch: BatchRecord | undefined, nested: boolean): string {
    if (message.state === 'confirmed' || message.state === 'rejected') return `, which is ${message.state} now: the aggregator decides this message at its next walk`
    const own = nested && batch ? this.deps.explain(message, batch) : undefined
    return own ? `, which waits itself (${this.explain(own.wait, batch, false).detail})` : ''
  }

  /** The batch and message a pin stands for, as far as this member holds them. */
  private atPin(pin: Pin): { batch?: BatchRecord; message?: Message } {
    // The batch the pin names (id and hash); a pin its key did not sign stands for none of its messages. A broadcast pin
    // (it names a payload) of a private batch held here waits for its own payload, as on a member without the batch.
    const batch = this.deps.batches.byIdHash(pin.batchId, pin.batchHash)
    if (batch && broadcastPinOfPrivate(pin, batch.type)) return {}
    if (!batch || batch.state === 'refused' || batch.key !== pin.signer) return batch ? { batch } : {}
    const place = new IndexedManifest(batch.manifest).at(pin.index)
    const message = place ? this.deps.messages.byRef(place.entry.id, place.entry.hash) : undefined
    return message ? { batch, message } : { batch }
  }

  /** Where the pin's BatchPin log was: ` (block N, log L)`, or `, block N, log L` after `sep`; nothing if not stored. */
  private blockOf(pin: Pin, sep?: string): string {
    const ev = this.deps.blockchainEvents.byIds([pin.eventId]).get(pin.eventId)
    if (!ev) return ''
    return sep ? `${sep}block ${ev.blockNumber}, log ${ev.logIndex}` : ` (block ${ev.blockNumber}, log ${ev.logIndex})`
  }

  private didOfKey(key: string): string {
    return this.deps.identities.byVerifier('ethereum_address', key)?.did ?? key
  }

  /** The node that sends `author`'s private batches of the group, by DID, with its org's name. */
  private memberNode(group: Hash, author: string): { peer: string; org: string } | undefined {
    const member = this.deps.groups.byHash(group)?.members.find((m) => m.identity === author)
    const node = member ? this.deps.identities.byId(member.node) : undefined
    return node ? this.node(node.did) : undefined
  }

  private node(did: string): { peer: string; org: string } {
    const node = this.deps.identities.byDid(did)
    const org = node?.parent ? this.deps.identities.byId(node.parent) : undefined
    return { peer: did, org: org?.name ?? did }
  }
}
