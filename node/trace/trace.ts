import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { BlockchainEventsRepo } from '../db/repos/blockchain-events.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import { IndexedManifest } from '../aggregator/manifest.js'
import type { MessageTrace, Message, BatchRecord, StoredBlockchainEvent } from '../model/index.js'
import { timelineOf, type MessagePlace, type TimelineDeps } from './timeline.js'
import { waitingOf, type WaitingDeps } from './waiting.js'

export type MessageTracerDeps = Omit<TimelineDeps, 'orgOfNode'> &
  Omit<WaitingDeps, 'orgOfNode'> & {
    messages: MessagesRepo
    batches: BatchesRepo
    pins: PinsRepo
    blockchainEvents: BlockchainEventsRepo
    identities: IdentitiesRepo
    /** This member's org and node names. */
    self: { org: string; node: string }
  }

/**
 * A message's trace on this member (GET .../messages/{id}/trace): its timeline here (timeline.ts) and, while it is
 * neither confirmed nor rejected, why it waits (waiting.ts, which asks the aggregator). Reads only.
 */
export class MessageTracer {
  private readonly timeline: TimelineDeps
  private readonly waiting: WaitingDeps

  constructor(private readonly deps: MessageTracerDeps) {
    const orgOfNode = (did: string): string => {
      const node = deps.identities.byDid(did)
      return (node?.parent ? deps.identities.byId(node.parent)?.name : undefined) ?? did
    }
    this.timeline = { ...deps, orgOfNode }
    this.waiting = { ...deps, orgOfNode }
  }

  /**
   * The trace of message `id` in `namespace` (with `hash`, the one of that hash among messages sharing the id; else the
   * one the id alone names); undefined when this member holds no such message there.
   */
  trace(namespace: string, id: string, hash?: string): MessageTrace | undefined {
    const message = hash === undefined ? this.deps.messages.get(id) : this.deps.messages.byRef(id, hash)
    if (!message || message.header.namespace !== namespace) return undefined
    const batch = message.batch ? this.deps.batches.carrying(message.batch, message.header.id, message.hash) : message.state === 'pending' ? this.deps.batches.receivedWith(message.header.id) : undefined
    const place: MessagePlace = { message, ...(batch ? { batch } : {}) }
    const pinEvent = batch ? this.pinEventOf(message, batch) : undefined
    if (pinEvent) place.pinEvent = pinEvent
    const waiting = waitingOf(this.waiting, place)
    return {
      message: message.header.id,
      org: this.deps.self.org,
      node: this.deps.self.node,
      state: message.state,
      timeline: timelineOf(this.timeline, place),
      ...(waiting ? { waiting } : {}),
    }
  }

  /** The BatchPin log this member read the message's first pin from, if it has read it. */
  private pinEventOf(message: Message, batch: BatchRecord): StoredBlockchainEvent | undefined {
    const entry = new IndexedManifest(batch.manifest).entries.find((e) => e.id === message.header.id)
    // The pins its batch's key signed naming its hash: those that decide it (another signer's decide nothing).
    const pins = this.deps.pins.deciding(batch.id, batch.hash, batch.key)
    const pin = entry ? pins.find((p) => p.index === entry.firstPin) : undefined
    return pin ? this.deps.blockchainEvents.byIds([pin.eventId]).get(pin.eventId) : undefined
  }
}
