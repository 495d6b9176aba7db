import { ParleyError } from '../core/errors.js'
import type { Gate } from '../core/gate.js'
import { parseUuid, type BatchId, type MessageId } from '../core/ids.js'
import { NAME_RE } from '../core/names.js'
import { orgDid, type BatchRecord, type Identity, type Message } from '../model/index.js'
import type { DeliveryGate, DeliveryRule } from '../messaging/delivery-gate.js'

/** The controls in force, as `GET /admin/v1/controls` answers them. */
export type ControlsView = {
  exchange: { held: DeliveryRule[]; dropped: DeliveryRule[] }
  chain: { held: boolean }
  ipfs: { held: boolean }
}

/** What a drop discarded: each (org, batch) whose deliveries will not be sent; by message until its batch is known. */
export type DropResult = { dropped: DeliveryRule[] }

export interface ControlsDeps {
  /** This member's org name: it delivers nothing to itself. */
  org: string
  deliveries: DeliveryGate
  /** The batches with deliveries to an org still pending (what a drop of all deliveries to it discards). */
  pendingTo: (org: string) => BatchId[]
  /** Reading BatchPin logs (the chain follower's gate). */
  chain: Gate
  /** Downloading batches and blobs from shared storage (the fetchers' gate). */
  ipfs: Gate
  identities: { byDid(did: string): Identity | undefined }
  /** `own`: this member's message of that id, whatever others hold under it. */
  messages: { get(id: MessageId): Message | undefined; own(id: MessageId): Message | undefined }
  batches: { get(id: BatchId): BatchRecord | undefined; local(id: BatchId): BatchRecord | undefined }
}

/**
 * The test controls behind the admin routes (served only when the member's config says `admin: true`): hold, release
 * and drop this member's private deliveries to another org, and hold or release its reading of the chain and of
 * shared storage. Each simulates a fault of a real network: a partitioned or slow link to one member, a delivery lost
 * for good (its topic stays blocked on the receiver: the ordering rule of docs/architecture.md), a member lagging behind the chain, an
 * IPFS that does not serve. All of it lives in memory: a restart of the member undoes it, and none of it changes what
 * the member stores (a dropped delivery's row stays pending and is sent after a restart).
 *
 * Bodies name deliveries as `{to: "<org name>", message?: "<id>", batch?: "<id>"}`; each mistake is a 400 naming it.
 */
export class Controls {
  constructor(private readonly deps: ControlsDeps) {}

  view(): ControlsView {
    return { exchange: this.deps.deliveries.view(), chain: { held: this.deps.chain.held }, ipfs: { held: this.deps.ipfs.held } }
  }

  /** Holds the deliveries the body names: they wait, without retries, until released. */
  holdDeliveries(body: unknown): ControlsView {
    this.deps.deliveries.hold(this.rule(body))
    return this.view()
  }

  /** Releases the holds the body names (see DeliveryGate.release); what they held goes out at once. */
  releaseDeliveries(body: unknown): ControlsView {
    this.deps.deliveries.release(this.rule(body))
    return this.view()
  }

  /**
   * Discards the deliveries the body names, pending or held, and never sends them while the member runs: `to` alone,
   * those pending now; a batch or a message, that batch's, queued now or later.
   */
  dropDeliveries(body: unknown): DropResult {
    const rule = this.rule(body)
    const gate = this.deps.deliveries
    if (rule.batch !== undefined) {
      gate.drop({ ...rule, batch: rule.batch })
      return { dropped: [rule] }
    }
    if (rule.message !== undefined) {
      gate.drop({ ...rule, message: rule.message })
      return { dropped: [rule] }
    }
    const dropped = this.deps.pendingTo(rule.to).map((batch) => ({ to: rule.to, batch }))
    gate.drop(...dropped)
    return { dropped }
  }

  holdChain(): ControlsView {
    this.deps.chain.hold()
    return this.view()
  }

  releaseChain(): ControlsView {
    this.deps.chain.release()
    return this.view()
  }

  holdIpfs(): ControlsView {
    this.deps.ipfs.hold()
    return this.view()
  }

  releaseIpfs(): ControlsView {
    this.deps.ipfs.release()
    return this.view()
  }

  /** The body as a rule, checked against what this member knows; a message's batch filled in once it has one. */
  private rule(body: unknown): DeliveryRule {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ParleyError('INVALID_FIELD', 'the body must be an object {to, message?, batch?}')
    const b = body as Record<string, unknown>
    for (const k of Object.keys(b)) if (k !== 'to' && k !== 'message' && k !== 'batch') throw new ParleyError('INVALID_FIELD', `${JSON.stringify(k)} is not a field; the body is {to, message?, batch?}`)
    const to = b.to
    if (typeof to !== 'string' || !NAME_RE.test(to)) throw new ParleyError('INVALID_FIELD', `to must be an org name: ${JSON.stringify(to)}`)
    if (to === this.deps.org) throw new ParleyError('INVALID_FIELD', `to names this member's own org ${to}: it delivers nothing to itself`)
    if (this.deps.identities.byDid(orgDid(to))?.type !== 'org') throw new ParleyError('INVALID_FIELD', `to names no org registered here: ${JSON.stringify(to)}`)
    const given = (v: unknown): boolean => v !== undefined && v !== null
    if (given(b.message) && given(b.batch)) throw new ParleyError('INVALID_FIELD', 'give message or batch, not both')
    if (given(b.message)) {
      const id = parseUuid<MessageId>(b.message, 'message')
      const m = this.deps.messages.own(id) ?? this.deps.messages.get(id)
      if (!m) throw new ParleyError('INVALID_FIELD', `message ${id} is not known to this member`)
      if (m.header.author !== orgDid(this.deps.org) || (m.header.type !== 'private' && m.header.type !== 'groupinit')) {
        throw new ParleyError('INVALID_FIELD', `message ${id} is not a private message sent by this member: it has no deliveries here`)
      }
      return { to, message: id, ...(m.batch ? { batch: m.batch } : {}) }
    }
    if (given(b.batch)) {
      const id = parseUuid<BatchId>(b.batch, 'batch')
      const batch = this.deps.batches.local(id) ?? this.deps.batches.get(id)
      if (!batch) throw new ParleyError('INVALID_FIELD', `batch ${id} is not known to this member`)
      if (batch.type !== 'private' || !batch.local) throw new ParleyError('INVALID_FIELD', `batch ${id} is not a private batch sent by this member: it has no deliveries here`)
      return { to, batch: id }
    }
    return { to }
  }
}
