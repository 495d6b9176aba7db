import { ParleyError } from '../core/errors.js'
import { dataJsonAround, rememberMessageJson } from '../model/wire.js'
import { newId, type DataId, type MessageId } from '../core/ids.js'
import { now } from '../core/time.js'
import { dataHash, dataRefsHash, messageHash } from '../core/hashes.js'
import type { Database } from '../db/database.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import { asOwn, type DataRepo } from '../db/repos/data.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { Confirmations } from '../events/confirmations.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { StorageGate } from '../db/capacity.js'
import type { DataInput, MessageInput } from './input.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import { groupinitFor, type GroupResolver, type ResolvedGroup } from '../identity/group-resolver.js'
import type { DataValidator } from '../data/validator.js'
import { MAX_MESSAGE_BYTES, type LocalIdentity, type Data, type DataRef, type Header, type Message, type MessageType, type NodeEvent } from '../model/index.js'

/** Where accepted messages go next: the batch manager, woken once the message is durable. */
export interface MessageSink {
  /**
   * `data`: every data item the message refers to, as resolved at send (so sealing need not read them back);
   * `bytes`: an estimate of what the message adds to a batch payload, for the payload limit.
   */
  accepted(m: Message, data: readonly Data[], bytes: number): void
}


export interface SendOptions {
  confirm?: boolean
  confirmTimeoutMs?: number
}

const DEFAULT_CONFIRM_TIMEOUT_MS = 120_000

/**
 * Accepts broadcasts and definitions: resolves and validates the data, seals the message (datahash, hash) and
 * stores message and new data in one durable transaction before answering. Nothing here waits on the chain.
 */
export class MessageSender {
  private registered = false

  constructor(
    private readonly deps: {
      db: Database
      messages: MessagesRepo
      data: DataRepo
      blobs: BlobsRepo
      refs: BlobRefsRepo
      identities: IdentitiesRepo
      self: LocalIdentity
      sink: MessageSink
      validator: DataValidator
      confirmations: Confirmations
      /** Refuses new sends (STORAGE_FULL) at the database's ceiling or while its disk is full; none in unit tests. */
      gate?: StorageGate
      /**
       * Unpinned private sends are confirmed on this node as soon as they are durable: the message_confirmed event is
       * written in the send's transaction, and `published` told once it commits. Without it, unpinned sends are refused.
       */
      unpinned?: { events: EventsRepo; published: (written: NodeEvent[]) => void }
      /** Private sends: who the group is, and where a new one is stored. Without them, private sends are refused. */
      privateGroups?: { resolver: GroupResolver; repo: GroupsRepo }
    },
  ) {}

  async broadcast(namespace: string, input: MessageInput, opts: SendOptions = {}): Promise<Message> {
    this.assertRegistered()
    return this.send(namespace, 'broadcast', input, opts)
  }

  /**
   * A private send: the group is resolved (by members or by hash), the message is typed `private` with the group's
   * hash, and stored as a broadcast is. A group new here is stored in the same transaction as the message, and its
   * groupinit message (and data) with it, accepted for batching before the message, so it is pinned first.
   *
   * With txtype none (FireFly's unpinned) the message is confirmed here at once, sealed into a batch of its own kind
   * without waiting, and delivered to each member without a pin. A new group's groupinit is still pinned (FireFly
   * sends it pinned whatever the txtype): members hold an unpinned message back until they know its group.
   */
  async private(namespace: string, input: MessageInput, opts: SendOptions = {}): Promise<Message> {
    this.assertRegistered()
    const groups = this.deps.privateGroups
    if (!groups) throw new ParleyError('UNAVAILABLE', 'private sends are not available on this node')
    const given = input.group ?? input.header.group
    if (given === undefined) throw new ParleyError('INVALID_FIELD', 'group is required: {members: [{identity}]} or a group hash in header.group')
    if (input.group && input.header.group) throw new ParleyError('INVALID_FIELD', 'give the group once: either group or header.group')
    const resolved = groups.resolver.resolve(namespace, given)
    return this.send(namespace, 'private', input, opts, resolved)
  }

  /**
   * Members confirm a message only if its signer's claim was ordered before it; until this node's own org claim is
   * confirmed here, that cannot be known, so application messages wait for it (registration takes a few seconds
   * after a member first starts; `network:up` is ready only after it).
   */
  assertRegistered(): void {
    // A confirmed claim stays confirmed: once seen, no send needs to read it again.
    if (this.registered) return
    if (!this.deps.identities.byDid(this.deps.self.orgDid)) {
      throw new ParleyError('UNAVAILABLE', `this node's org ${this.deps.self.orgDid} is not registered yet (its claim is not confirmed); try again shortly`)
    }
    this.registered = true
  }

  /** A system definition (identity claim, datatype): always broadcast and pinned, on the system namespace. */
  async definition(namespace: string, tag: string, topics: string[], valueRaw: string, opts: SendOptions = {}): Promise<Message> {
    return this.send(namespace, 'definition', { header: { tag, topics }, data: [{ kind: 'inline', valueRaw, validator: 'json' }] }, opts)
  }

  private async send(namespace: string, type: MessageType, input: MessageInput, opts: SendOptions, group?: ResolvedGroup): Promise<Message> {
    this.deps.gate?.admit()
    const { self } = this.deps
    const author = this.resolveAuthor(input.header.author)
    if (input.header.key && input.header.key.toLowerCase() !== self.key) {
      throw new ParleyError('INVALID_FIELD', `header.key ${input.header.key} is not a key this node can sign with (it signs with ${self.key})`)
    }
    const unpinned = input.header.txtype === 'none'
    if (unpinned && !group) throw new ParleyError('INVALID_FIELD', 'txtype none (unpinned) is only for private sends')
    if (unpinned && !this.deps.unpinned) throw new ParleyError('UNAVAILABLE', 'unpinned sends are not available on this node')
    const created = now()
    const { items, fresh, adopted } = this.resolveData(namespace, input.data, created)
    // A private blob travels from this node's blob store to each member node, before its batch: it must be held here.
    const unheld = group ? items.findIndex((d) => d.blob !== undefined && !this.deps.blobs.has(d.blob.hash)) : -1
    if (unheld >= 0) throw new ParleyError('INVALID_FIELD', `data[${unheld}]: this node does not hold the blob ${items[unheld]!.blob!.hash}, and a private message carries only blobs it can send`)
    const refs: DataRef[] = items.map((d) => ({ id: d.id, hash: d.hash }))
    const header: Header = {
      id: newId<MessageId>(),
      ...(input.header.cid ? { cid: input.header.cid as MessageId } : {}),
      type,
      txtype: unpinned ? 'none' : 'batch_pin',
      author,
      key: self.key,
      created,
      namespace,
      ...(group ? { group: group.group.hash } : {}),
      topics: input.header.topics && input.header.topics.length > 0 ? input.header.topics : [namespace],
      ...(input.header.tag ? { tag: input.header.tag } : {}),
      datahash: dataRefsHash(refs),
    }
    const message: Message = {
      header,
      hash: messageHash(header),
      state: 'ready',
      data: refs,
      ...(input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
    }
    // Every member refuses a batch past the payload limit: a message that could only travel in one is refused here.
    const size = encodedSize(message, items)
    if (size > MAX_MESSAGE_BYTES) {
      throw new ParleyError('PAYLOAD_TOO_LARGE', `the message with its data is ${size} bytes as a batch carries it (JSON-encoded, HTML-escaped); at most ${MAX_MESSAGE_BYTES}`)
    }
    // After the cheap refusals; validated together, a costly lot off the main thread (see DataValidator.validateAll).
    await this.deps.validator.validateAll(namespace, fresh)
    const waiting = opts.confirm && !unpinned ? this.deps.confirmations.wait(header.id, opts.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS) : undefined
    waiting?.catch(() => {})
    const init = group?.isNew ? groupinitFor(group.group, self) : undefined
    let confirmed: Message | undefined
    let written: NodeEvent[] = []
    const initSent = await this.deps.db.transaction((tx) => {
      if (input.idempotencyKey) {
        const dup = this.deps.messages.byIdempotencyKey(namespace, input.idempotencyKey, tx)
        if (dup) throw new ParleyError('CONFLICT', `the idempotency key was already used for message ${dup.header.id}`)
      }
      // Only the send whose insert stores the group sends its groupinit (another send may have stored it meanwhile).
      let sent = false
      if (init && this.deps.privateGroups!.repo.insert(tx, { ...group!.group, message: init.message.header.id })) {
        this.deps.data.write(tx, [init.data], true)
        this.deps.messages.insert(tx, init.message, true)
        sent = true
      }
      this.deps.data.write(tx, fresh, true)
      // A peer's data item it names becomes this member's own: its messages name their data by id and hash alone.
      if (adopted.length > 0) this.deps.data.write(tx, adopted, true)
      // An unpinned message is stored confirmed: nothing orders it, it is final once durable.
      if (unpinned) confirmed = { ...message, state: 'confirmed', confirmed: now() }
      this.deps.messages.insert(tx, confirmed ?? message, true)
      if (confirmed) {
        const at = confirmed.confirmed!
        const e = { type: 'message_confirmed' as const, namespace, reference: header.id, referenceHash: message.hash, topic: header.topics[0]!, ...(header.cid ? { correlator: header.cid } : {}) }
        written = this.deps.unpinned!.events.insertMany(tx, [e], at)
      }
      return sent
    })
    if (written.length > 0) this.deps.unpinned!.published(written)
    if (init && initSent) this.deps.sink.accepted(init.message, [init.data], payloadEstimate(init.message, [init.data]))
    const accepted = confirmed ?? message
    this.deps.sink.accepted(accepted, items, payloadEstimate(accepted, items))
    return waiting ? await waiting : accepted
  }

  private resolveAuthor(requested: string | undefined): string {
    const { self } = this.deps
    if (requested === undefined || requested === self.orgDid || requested === self.org) return self.orgDid
    throw new ParleyError('INVALID_FIELD', `author ${JSON.stringify(requested)} is not an identity this node can sign for (it signs for ${self.orgDid})`)
  }

  /**
   * The data items a send carries: `fresh` ones made from inline values, and `adopted`, copies of peers' items named by
   * id, which the send stores as this member's own (a received row stays as its batch carried it).
   */
  private resolveData(namespace: string, inputs: DataInput[], created: Data['created']): { items: Data[]; fresh: Data[]; adopted: Data[] } {
    const fresh: Data[] = []
    const adopted: Data[] = []
    const items = inputs.map((d, i) => {
      if (d.kind === 'ref') {
        const found = this.deps.data.toSend(d.id)
        if (!found || found.namespace !== namespace) throw new ParleyError('INVALID_FIELD', `data[${i}]: no data ${d.id} in namespace ${namespace}`)
        // A blob goes out with the message: this node must hold it, or it must already be published (and not be known bad).
        const verdict = found.blob?.public ? this.deps.refs.verdict({ hash: found.blob.hash, size: found.blob.size, public: found.blob.public }) : undefined
        if (verdict && !verdict.ok) throw new ParleyError('INVALID_FIELD', `data[${i}]: the blob of data ${d.id} cannot be obtained: ${verdict.reason}`)
        if (found.blob && !found.blob.public && !this.deps.blobs.has(found.blob.hash)) {
          throw new ParleyError('INVALID_FIELD', `data[${i}]: this node does not hold the blob ${found.blob.hash} of data ${d.id}`)
        }
        if (found.digest === undefined) return found
        const own = asOwn(found)
        adopted.push(own)
        return own
      }
      const valueRaw = d.valueRaw === 'null' ? null : d.valueRaw
      const item: Data = {
        id: newId<DataId>(),
        validator: d.validator,
        namespace,
        hash: dataHash({ valueRaw }),
        created,
        ...(d.datatype ? { datatype: d.datatype } : {}),
        value: valueRaw,
      }
      fresh.push(item)
      return item
    })
    return { items, fresh, adopted }
  }
}

/**
 * The bytes a message and its data take in a batch payload, exactly as serializeBatch writes them (each data item
 * counted, though a batch carries an item shared by two messages once). The value is measured, not copied.
 */
function encodedSize(m: Message, data: readonly Data[]): number {
  // Written once: the batch this message goes in reuses the text (see rememberMessageJson).
  let size = Buffer.byteLength(rememberMessageJson(m))
  for (const d of data) {
    const { before, after } = dataJsonAround(d)
    size += Buffer.byteLength(before) + Buffer.byteLength(d.value ?? 'null') + Buffer.byteLength(after)
  }
  return size
}

/** Roughly what a message adds to a batch: its header and refs, plus the data values it brings along (also those it refers to). */
export function payloadEstimate(m: Message, data: readonly Data[]): number {
  return 600 + m.header.topics.join('').length + m.data.length * 120 + data.reduce((n, d) => n + (d.value?.length ?? 0) + 300, 0)
}
