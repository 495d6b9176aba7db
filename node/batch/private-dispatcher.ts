import { formatPin, nonceKey, parsePin, privatePin } from '../core/hashes.js'
import { ParleyError } from '../core/errors.js'
import type { Hash, MessageId } from '../core/ids.js'
import type { Tx } from '../db/database.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { NoncesRepo } from '../db/repos/nonces.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { BatchPayload, BatchRecord, Group, LocalIdentity, Message } from '../model/index.js'
import type { Dispatcher, SealedBatch } from './dispatcher.js'

/** What the private dispatcher hands its batches to: the durable delivery queue (messaging/delivery-queue.ts). */
export interface BatchDelivery {
  /** Resolves once a delivery to each peer is recorded durably; the deliveries themselves go on in the background. */
  enqueue(payload: BatchPayload, peers: readonly string[]): Promise<void>
}

/**
 * Private batches (FireFly's private messaging dispatcher): at sealing, each message gets one masked pin per topic,
 * `privatePin(topic, group, author DID, nonce)`, with the nonce of (topic, group, author) allocated in the sealing
 * transaction and recorded on the message as `pins` ("<hex>:<16-digit nonce>"). `prepare` queues the sealed batch for
 * every other member node of its group (durably) and resolves then, so the pin follows without waiting for any
 * member (FireFly does not wait for data exchange delivery before pinning either): a member that is down holds only
 * itself, confirming once its delivery arrives. The pin carries no payload reference. Nothing private goes to shared
 * storage.
 */
export class PrivateDispatcher implements Dispatcher {
  readonly type = 'private' as const

  constructor(
    private readonly deps: {
      messages: MessagesRepo
      nonces: NoncesRepo
      groups: GroupsRepo
      identities: IdentitiesRepo
      self: LocalIdentity
      delivery: BatchDelivery
    },
  ) {}

  /**
   * Each sequence of (topic, group, author) takes its nonces for the whole batch in one statement, given out in
   * message order; the pins of every message are recorded in one more.
   */
  seal(tx: Tx, _record: BatchRecord, messages: readonly Message[]): Message[] {
    const wanting = messages.filter((m) => {
      // An unpinned message has no pins: nothing orders it on chain.
      if (m.header.txtype === 'none') return false
      if (!m.header.group) throw new ParleyError('INTERNAL', `private message ${m.header.id} has no group`)
      // Pins are allocated once; a message sealed again (it never is today) keeps them.
      return !(m.pins && m.pins.length === m.header.topics.length)
    })
    if (wanting.length === 0) return [...messages]
    const keyOf = (m: Message, topic: string): Hash => nonceKey(topic, m.header.group!, m.header.author)
    const counts = new Map<Hash, number>()
    for (const m of wanting) for (const topic of m.header.topics) counts.set(keyOf(m, topic), (counts.get(keyOf(m, topic)) ?? 0) + 1)
    const next = new Map<Hash, number>()
    for (const [key, count] of counts) next.set(key, this.deps.nonces.allocate(tx, key, count))
    const pinned = new Map<string, { hash: Hash; pins: string[] }>()
    for (const m of wanting) {
      pinned.set(m.header.id, {
        hash: m.hash,
        pins: m.header.topics.map((topic) => {
          const key = keyOf(m, topic)
          const nonce = next.get(key)!
          next.set(key, nonce + 1)
          return formatPin(privatePin(topic, m.header.group!, m.header.author, nonce), nonce)
        }),
      })
    }
    this.deps.messages.setPinsMany(tx, [...pinned].map(([id, p]) => ({ id: id as MessageId, hash: p.hash, pins: p.pins })))
    return messages.map((m) => {
      const pins = pinned.get(m.header.id)?.pins
      return pins ? { ...m, pins } : m
    })
  }

  async prepare(batch: SealedBatch, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted()
    const hash = batch.record.group ?? batch.payload.messages[0]?.header.group
    const group = hash ? this.deps.groups.byHash(hash) : undefined
    if (!group) throw new ParleyError('INTERNAL', `private batch ${batch.record.id}: group ${hash ?? '(none)'} is not stored here`)
    await this.deps.delivery.enqueue(batch.payload, this.peersOf(group))
    return ''
  }

  contexts(batch: SealedBatch): Hash[] {
    return batch.payload.messages.flatMap((m) => {
      if (m.header.txtype === 'none') throw new ParleyError('INTERNAL', `unpinned message ${m.header.id} cannot be pinned`)
      if (!m.pins || m.pins.length !== m.header.topics.length) throw new ParleyError('INTERNAL', `private message ${m.header.id} was sealed without its pins`)
      return m.pins.map((p) => parsePin(p).hash)
    })
  }

  /** The node DIDs of the group's members other than this node. */
  private peersOf(group: Group): string[] {
    const out = new Set<string>()
    for (const m of group.members) {
      const node = this.deps.identities.byId(m.node)
      if (!node) throw new ParleyError('UNAVAILABLE', `group ${group.hash}: node ${m.node} is not registered here`)
      if (node.did !== this.deps.self.nodeDid) out.add(node.did)
    }
    return [...out]
  }
}
