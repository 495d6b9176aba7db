import { Aggregator } from '../../node/aggregator/aggregator.js'
import { BatchFetcher } from '../../node/aggregator/batch-fetcher.js'
import { pinIngest } from '../../node/aggregator/pin-ingest.js'
import { PrivateChecks } from '../../node/aggregator/private-check.js'
import { PrivateReceiver } from '../../node/aggregator/private-receiver.js'
import { UnpinnedBatchQuota } from '../../node/aggregator/unpinned-quota.js'
import { parseBatch, serializeBatch } from '../../node/batch/payload.js'
import { sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, formatPin, identityTopic, messageHash, parsePin, privatePin } from '../../node/core/hashes.js'
import { sealGroup } from '../../node/identity/group-resolver.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { DataValidatorImpl } from '../../node/data/validator.js'
import { NextPinsRepo } from '../../node/db/repos/nextpins.js'
import { claimValue, identityClaimHandler } from '../../node/definitions/identity-claim.js'
import type { DefinitionHandler } from '../../node/definitions/types.js'
import type { Peer } from '../../node/exchange/index.js'
import { BATCH_PIN_ACTION, localIdentity, nodeDid, orgDid, orgOfDid, SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type BatchPayload, type Data, type Group, type Header, type PinnedBatch } from '../../node/model/index.js'
import { openRepos, type Repos, type TestEngine } from './repos.js'
import type { MemoryStorage } from './storage.js'

/** A batch as a sender seals it: its payload, and where it was published (broadcast). */
export interface SealedBatch {
  payload: BatchPayload
  /** The payload's shared-storage reference, once uploaded (broadcast). */
  ref?: string
}

/** An org registered from the start, with its node. */
export interface RegisteredOrg {
  org: string
  node: string
  key: string
  orgId: IdentityId
  nodeId: IdentityId
}

/** `org<i>` with node `node<i>` and a key of its own, for i < n. */
export function registeredOrgs(n: number): RegisteredOrg[] {
  return Array.from({ length: n }, (_, i) => ({ org: `org${i}`, node: `node${i}`, key: '0x' + `a${i}`.repeat(20), orgId: newId<IdentityId>(), nodeId: newId<IdentityId>() }))
}

/** The group of these orgs' nodes, in `namespace`. */
export function groupOf(orgs: readonly RegisteredOrg[], namespace = 'default'): Group {
  const sealed = sealGroup(namespace, '', orgs.map((o) => ({ identity: orgDid(o.org), node: o.nodeId })))
  return { hash: sealed.hash, namespace, name: '', members: sealed.members, created: now() }
}

/** The peer an org's node is to the exchange. */
export function peerOf(o: RegisteredOrg): Peer {
  return { node: nodeDid(o.node), org: o.org, endpoint: 'https://127.0.0.1:1', cert: '' }
}

/** A private batch of one message per topic list by `o` in `group`, with the pins of the nonces given (per message, per topic). */
export function privateBatch(o: RegisteredOrg, group: Group, topicLists: string[][], nonces: number[][], opts: { id?: BatchId } = {}): BatchPayload {
  const author = orgDid(o.org)
  const data: Data[] = []
  const messages = topicLists.map((topics, i) => {
    const value = JSON.stringify({ topics, n: newId() })
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: group.namespace, hash: dataHash({ valueRaw: value }), created: now(), value }
    data.push(d)
    const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author, key: o.key, created: now(), namespace: group.namespace, group: group.hash, topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
    const pins = topics.map((t, j) => formatPin(privatePin(t, group.hash, author, nonces[i]![j]!), nonces[i]![j]!))
    return { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }], pins }
  })
  const id = opts.id ?? newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'private', namespace: group.namespace, node: nodeDid(o.node), author, key: o.key, group: group.hash, created: now(), hash, tx, messages, data }
}

/**
 * `b` (a batch of one message) with its message carrying `d` instead of its own data item, its hashes recomputed: a
 * copy of another's data item (its id and value) with other carried fields, say.
 */
export function carryingData(b: BatchPayload, d: Data): BatchPayload {
  const m = b.messages[0]!
  const refs = [{ id: d.id, hash: d.hash }]
  const header = { ...m.header, datahash: dataRefsHash(refs) }
  const messages = [{ ...m, header, hash: messageHash(header), data: refs }]
  return { ...b, messages, data: [d], hash: sealManifest({ ...b, messages, data: [d] }).hash }
}

/** `d` carried with a datatype nobody defines (a field its hash does not cover): a message naming it is rejected. */
export const NOSUCH = (d: Data): Data => ({ ...d, datatype: { name: 'nosuch', version: '1' } })

/**
 * `b` sent again by its author under a new batch id and transaction: the same messages (ids and hashes), their data
 * items changed by `change` in the fields their hashes do not cover, and their pins replaced by `pins` when given.
 */
export function resent(b: BatchPayload, change: (d: Data) => Data, pins?: string[]): BatchPayload {
  const id = newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const data = b.data.map(change)
  const messages = pins ? b.messages.map((m) => ({ ...m, pins })) : b.messages
  return { ...b, id, tx, messages, data, hash: sealManifest({ id, tx, messages, data }).hash }
}

/** One BatchPin log, as the chain follower hands it over. */
export interface PinLog {
  signer: string
  batchId: BatchId
  batchHash: Hash
  txId: TxId
  payloadRef: string
  contexts: Hash[]
}

/** The BatchPin log a batch's own key (or anyone else, with other fields) would submit for it. */
export function pinLogOf(b: SealedBatch, over: Partial<PinLog> = {}): PinLog {
  const p = b.payload
  const contexts = p.messages.flatMap((m) => (m.pins ? m.pins.map((x) => parsePin(x).hash) : m.header.topics.map((t) => broadcastContext(t))))
  return { signer: p.key, batchId: p.id, batchHash: p.hash, txId: p.tx.id, payloadRef: b.ref ?? '', contexts, ...over }
}

/** A broadcast batch of one message per topic list, signed by `key` for `org`. */
export function broadcastBatch(org: string, key: string, topicLists: string[][], opts: { namespace?: string; header?: Partial<Header>; value?: (i: number) => string; id?: BatchId } = {}): BatchPayload {
  const namespace = opts.namespace ?? 'default'
  const data: Data[] = []
  const messages = topicLists.map((topics, i) => {
    const value = opts.value?.(i) ?? JSON.stringify({ topics, n: newId() })
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace, hash: dataHash({ valueRaw: value }), created: now(), value }
    data.push(d)
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: orgDid(org), key, created: now(), namespace, topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]), ...opts.header }
    return { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }] }
  })
  const id = opts.id ?? newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'broadcast', namespace, author: orgDid(org), key, created: now(), hash, tx, messages, data }
}

/** An org's registration claim, signed with its key, as node/definitions/registration.ts sends it. */
export function claimBatch(org: string, key: string): BatchPayload {
  const did = orgDid(org)
  const value = claimValue({ id: newId<IdentityId>(), did, type: 'org', name: org })
  return broadcastBatch(org, key, [[identityTopic(did)]], { namespace: SYSTEM_NAMESPACE, header: { type: 'definition', tag: TAG_IDENTITY_CLAIM }, value: () => value })
}

/**
 * One member's receiving side in-process, over a real database: the chain follower's sink, the broadcast fetcher
 * (over shared storage in memory), the private receiver and the aggregator with the identity claim handler, as
 * node/startup/managers.ts wires them. Pins announce broadcast batches to `announced` instead of fetching at once,
 * so a test decides when each payload arrives (`fetch`).
 */
export class AggregatorMember {
  readonly announced: PinnedBatch[] = []
  readonly logs: string[] = []
  private block = 0
  private readonly settling = new Map<string, () => void>()

  private constructor(
    readonly r: Repos,
    readonly agg: Aggregator,
    readonly fetcher: BatchFetcher,
    readonly receiver: PrivateReceiver,
    private readonly ingest: ReturnType<typeof pinIngest>,
    /** The quota on batches no pin names yet, when opened with one. */
    readonly quota?: UnpinnedBatchQuota,
  ) {}

  /**
   * `definitions`: handlers besides the identity claim's, built on this member's repos (a groupinit's, say).
   * `unpinned`: the member takes unpinned private batches (confirmed on arrival). `unpinnedBatchBytes`: the member
   * counts batches no pin names yet against this quota per org (`quota`), read from its database at open, as
   * node/startup/managers.ts does. `engine`: its database's.
   */
  static async open(
    dir: string,
    storage: MemoryStorage,
    self: { org: string; node: string; key: string },
    opts: { definitions?: (r: Repos) => DefinitionHandler[]; unpinned?: boolean; unpinnedBatchBytes?: number; engine?: TestEngine } = {},
  ): Promise<AggregatorMember> {
    const r = await openRepos(dir, opts.engine)
    const quota =
      opts.unpinnedBatchBytes === undefined
        ? undefined
        : new UnpinnedBatchQuota({ limitBytes: opts.unpinnedBatchBytes, keepMs: 24 * 3_600_000 }, r.unpinnedBatches.charges().map((c) => ({ ...c, org: orgOfDid(c.author) })))
    let member: AggregatorMember | undefined
    const validator = new DataValidatorImpl(() => undefined)
    const log = (l: string) => member?.logs.push(l)
    const agg = new Aggregator({
      ...r,
      validator,
      definitions: [identityClaimHandler(r.identities, () => {}, (tx, seq) => r.pins.lastOfEvent(tx, seq)), ...(opts.definitions?.(r) ?? [])],
      privateChecks: new PrivateChecks({ nextpins: new NextPinsRepo(r.db), pins: r.pins, groups: r.groups, identities: r.identities }),
      log,
      onOutcome: () => {},
    })
    const done = (key: string) => {
      member?.settling.get(key)?.()
      member?.settling.delete(key)
    }
    const fetcher = new BatchFetcher({
      ...r,
      storage,
      log,
      receive: (b, manifest, payloadRef) => agg.receive(b, manifest, payloadRef).then(() => done(`${b.id}/${b.hash}`)),
      refused: (p) => {
        agg.pinEventRefused(p)
        done(`${p.batchId}/${p.batchHash}`)
      },
      announced: () => {},
    })
    const unpinned = opts.unpinned ? { unpinned: { blobs: r.blobs, validator, events: r.events, published: () => {} } } : {}
    const receiver = new PrivateReceiver({
      ...r,
      self: localIdentity(self.org, self.node, self.key),
      arrived: (id, hash) => agg.batchArrived(id, hash),
      ...unpinned,
      ...(quota ? { quota: { batches: quota, pins: r.pins } } : {}),
    })
    const ingest = pinIngest({ ...r, published: () => {}, fetch: (p) => member?.announced.push(p), wake: () => agg.wake(), privatePinned: (id, hash, signer) => quota?.pinned(id, hash, signer) })
    member = new AggregatorMember(r, agg, fetcher, receiver, ingest, quota)
    agg.start()
    return member
  }

  /**
   * Records orgs (with their keys) and their nodes as registered, as their confirmed claims would (with no claim on
   * chain: they count as members from the chain's start), and groups of them. Ids are given, so that every member
   * holds the same groups.
   */
  async register(orgs: readonly RegisteredOrg[], groups: readonly Group[] = []): Promise<void> {
    await this.r.db.transaction((tx) => {
      for (const o of orgs) {
        this.r.identities.insert(tx, { id: o.orgId, did: orgDid(o.org), type: 'org', namespace: SYSTEM_NAMESPACE, name: o.org, messages: { claim: newId<MessageId>() }, created: now() })
        this.r.identities.insertVerifier(tx, { identity: o.orgId, type: 'ethereum_address', value: o.key, created: now() })
        this.r.identities.insert(tx, { id: o.nodeId, did: nodeDid(o.node), type: 'node', parent: o.orgId, namespace: SYSTEM_NAMESPACE, name: o.node, messages: { claim: newId<MessageId>() }, created: now() })
      }
      for (const g of groups) this.r.groups.insert(tx, g)
    })
  }

  /** Reads one BatchPin log from the chain, in the next block. */
  async pin(log: PinLog): Promise<void> {
    this.block++
    const b = this.block
    await this.ingest(
      [
        {
          blockNumber: b,
          txIndex: 0,
          logIndex: 0,
          protocolId: `${String(b).padStart(12, '0')}/000000/000000`,
          txHash: '0x' + b.toString(16).padStart(64, '0'),
          author: log.signer as never,
          timestamp: 1,
          action: BATCH_PIN_ACTION,
          txId: log.txId,
          batchId: log.batchId,
          batchHash: log.batchHash,
          payloadRef: log.payloadRef,
          contexts: log.contexts,
        },
      ],
      b,
    )
    await this.agg.whenIdle()
  }

  /**
   * Reads the pins in order, fetching each payload they announce as it comes, except one naming `never` (a reference
   * that resolves to nothing: its pins wait for it).
   */
  async chain(logs: readonly PinLog[], never?: string): Promise<void> {
    for (const log of logs) {
      const before = this.announced.length
      await this.pin(log)
      for (const p of this.announced.slice(before)) if (p.payloadRef !== never) await this.fetch(p)
    }
  }

  /** Downloads the payload a pin announced (stored or refused), then lets the aggregator walk what it allows. */
  async fetch(p: PinnedBatch): Promise<void> {
    const key = `${p.batchId}/${p.batchHash}`
    if (!this.r.batches.holds(p.batchId, p.batchHash, p.payloadRef)) {
      const settled = new Promise<void>((resolve) => this.settling.set(key, resolve))
      this.fetcher.fetch(p)
      await settled
    }
    await this.settle()
  }

  /** A private batch delivered by `from`; answers the receiver's refusal, if any. */
  async deliver(from: Peer, payload: BatchPayload): Promise<string | undefined> {
    try {
      await this.receiver.handle(from, parseBatch(serializeBatch(payload)))
    } catch (err) {
      return err instanceof Error ? err.message : String(err)
    }
    await this.settle()
    return undefined
  }

  async settle(): Promise<void> {
    await this.agg.whenIdle()
    this.agg.wake()
    await this.agg.whenIdle()
  }

  /** The messages confirmed here, in the order their events were written. */
  confirmed(): string[] {
    return this.r.events.list({ namespace: 'default', type: 'message_confirmed', limit: 10_000, skip: 0, ascending: true }).map((e) => e.reference)
  }

  state(messageId: string): string | undefined {
    return this.r.messages.get(messageId)?.state
  }

  async close(): Promise<void> {
    await this.fetcher.stop()
    await this.agg.stop()
    await this.r.db.close()
  }
}
