/**
 * A hostile member of a running network, working from the network's state folder like the other controls: it signs
 * with a member's own key (or one of Hardhat's funded accounts, or a fresh one), connects to peers with the member's
 * own node certificate, and breaks the rules the honest node keeps. Each method is one attack of DESIGN section 9;
 * `npm run network -- rogue <org> <verb>` runs the same (network/rogue/args.ts).
 */
import { randomUUID } from 'node:crypto'
import { broadcastContext, dataHash } from '../../node/core/hashes.js'
import { compactJson } from '../../node/core/json.js'
import { newId, type BatchId, type Hash, type IdentityId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { orgDid, type BatchPayload, type DatatypeRef, type GroupMember } from '../../node/model/index.js'
import { createIpfsStorage } from '../../node/storage/ipfs.js'
import { serializeBatch } from '../../node/batch/payload.js'
import type { MemberDescription, NetworkDescription } from '../description.js'
import { memberGet } from '../inspect.js'
import { layout } from '../layout.js'
import { broadcastBatch, broadcastContexts, garbageContexts, garbagePinArgs, junkHash, makeGroup, orgClaimBatch, privateBatch, privateContexts, type PinArgs } from './batches.js'
import { rogueKey, sendPin, type KeySource } from './chain.js'
import { RogueExchange, type DeliveryOutcome } from './exchange.js'
import { sleep } from '../process.js'
import { nextPendingPin, pendingPins, type PendingPin } from './pool.js'
import type { ClaimNameResult, DeliverUnderResult, FloodBatchesResult, FloodBlobsResult, ForeignGroupResult, GarbagePinResult, PinSent, RepinPrivateResult, ReuseIdResult, SquatPinResult } from './results.js'

/** What the attacks need of the network: its folder, its description and its members by name. */
export interface RogueNetwork {
  dir: string
  description: NetworkDescription
  member(name: string): MemberDescription
}

/** A mistake in what an attack was asked to do (the CLI prints it and exits 1). */
export class RogueError extends Error {}

/**
 * Who the hostile member is: a member (`'org1'`), or only a chain account: one of Hardhat's funded accounts
 * (`{ account: 15 }`) or a fresh key funded for the purpose (`{ fresh: true }`).
 */
export type RogueWho = string | { account: number } | { fresh: true }

export class RogueMember {
  private readonly self: MemberDescription | undefined
  /** The key chain-only attacks sign with. */
  private readonly signer: KeySource

  constructor(
    private readonly net: RogueNetwork,
    who: RogueWho,
  ) {
    if (typeof who === 'string') {
      this.self = net.member(who)
      this.signer = { org: this.self.org }
    } else {
      this.signer = who
    }
  }

  /**
   * Pins a batch that does not exist (a fresh id, a junk hash, a reference that resolves to nothing) on `topic`'s
   * context, from the member's key or the chain account.
   */
  async garbagePin(opts: { topic: string }): Promise<GarbagePinResult> {
    const key = await this.key(this.signer)
    const pin = await this.pin(key, garbagePinArgs([broadcastContext(opts.topic)]))
    return { attack: 'garbage-pin', topic: opts.topic, pin }
  }

  /**
   * Pins another member's batch id first: `batch` (a private batch id learned as a group member, say), or with `next`
   * the next pinBatch of another signer seen in the chain's pool (mining off), outbidding its tip so that the chain
   * mines this one first. The pin carries a junk hash, `topic`'s context or else garbage contexts, and `payloadRef`
   * (default: for a broadcast, a reference that resolves to nothing; for a private batch, none).
   */
  async squatPin(opts: { batch?: string; next?: boolean; topic?: string; payloadRef?: string; timeoutMs?: number }): Promise<SquatPinResult> {
    if ((opts.batch === undefined) === (opts.next !== true)) throw new RogueError('squat-pin: name a batch (--batch ID) or take the next one from the pool (--next), one of the two')
    const key = await this.key(this.signer)
    const { rpc, contract } = this.net.description.chain
    let victim: PendingPin | undefined
    if (opts.next) {
      const ours = new Set((await pendingPins(rpc, contract)).filter((p) => p.from === key.address).map((p) => p.batchId as string))
      victim = await nextPendingPin(rpc, contract, { self: key.address, skip: ours, timeoutMs: opts.timeoutMs ?? 30_000 })
    } else {
      victim = (await pendingPins(rpc, contract)).find((p) => p.batchId === opts.batch && p.from !== key.address)
    }
    const broadcast = victim ? victim.payloadRef !== '' : opts.payloadRef !== undefined
    const args: PinArgs = {
      txId: victim?.txId ?? newId<TxId>(),
      batchId: (victim?.batchId ?? opts.batch) as BatchId,
      batchHash: junkHash(),
      payloadRef: opts.payloadRef ?? (broadcast ? garbagePinArgs([]).payloadRef : ''),
      contexts: opts.topic !== undefined ? [broadcastContext(opts.topic)] : garbageContexts(Math.max(1, victim?.contexts.length ?? 1)),
    }
    const pin = await this.pin(key, args, victim?.tip)
    return { attack: 'squat-pin', ...(victim ? { victim: { txHash: victim.txHash, signer: victim.from } } : {}), pin }
  }

  /**
   * Delivers to `victim`, over the exchange with the member's own node certificate, a valid private batch of the
   * member's own (a new group of the two, its groupinit and one message) under the id `batch` of another batch: a
   * broadcast the victim has not fetched yet (hold its IPFS reading first), say. Nothing is pinned.
   */
  async deliverUnder(opts: { victim: string; batch: string; namespace?: string }): Promise<DeliverUnderResult> {
    const self = this.member('deliver-under')
    const victim = this.net.member(opts.victim)
    if (victim.org === self.org) throw new RogueError(`deliver-under: the victim is ${self.org} itself`)
    const group = makeGroup(opts.namespace ?? 'default', `rogue-${randomUUID().slice(0, 8)}`, [
      { identity: self.did, node: await this.nodeId(self) },
      { identity: victim.did, node: await this.nodeId(victim) },
    ])
    const payload = privateBatch(self, group, [{ topic: `rogue-${randomUUID().slice(0, 8)}`, value: { takeover: opts.batch }, nonce: 0 }], { withGroupinit: true, id: opts.batch as BatchId })
    const exchange = new RogueExchange(layout(this.net.dir), self)
    try {
      const delivery = await exchange.deliver(victim, payload)
      return { attack: 'deliver-under', batchId: payload.id, group: group.hash, messages: payload.messages.map((m) => m.header.id), delivery }
    } finally {
      await exchange.stop()
    }
  }

  /**
   * Pins a message of the member's own under the id of another member's message `message`, with other content, on a
   * topic of its own: what a member that learnt the id can do (a private batch travels before its pin). For a private
   * message, in the same group, delivered first to `to` (default: every member of the group, its own node too, so that
   * each holds it and reaches its own verdict), one by one, then pinned; for a broadcast, published to shared storage and pinned. Every member stores both messages and
   * decides each on its own, alike (docs/architecture.md, "Ids reused with other content").
   *
   * With `datatype`, it copies instead the message's data item (its id and value, so the same hash) into a message of
   * its own on a topic of its own, carried with that datatype (a field the hash does not cover): delivered first to `to`
   * (with the member's own node, in a new group of theirs) and then pinned, or else published to shared storage and
   * pinned. Each message is decided by the data its own batch carried, whichever a member held first.
   */
  async reuseId(opts: { message: string; to?: string[]; namespace?: string; datatype?: DatatypeRef }): Promise<ReuseIdResult> {
    const self = this.member('reuse-id')
    const ns = opts.namespace ?? 'default'
    const base = `/api/v1/namespaces/${encodeURIComponent(ns)}`
    if (opts.datatype !== undefined) return this.copyData(self, { ...opts, namespace: ns, datatype: opts.datatype })
    const taken = await memberGet<{ header: { id: string; group?: string } }>(self, `${base}/messages/${encodeURIComponent(opts.message)}`).catch((err: unknown) => {
      throw new RogueError(`reuse-id: ${self.org} does not hold message ${opts.message} in namespace ${ns} (${(err as Error).message})`)
    })
    const topic = `reuse-${randomUUID().slice(0, 8)}`
    const key = await this.key({ org: self.org })
    const groupHash = taken.header.group
    if (groupHash === undefined) {
      if (opts.to !== undefined) throw new RogueError(`reuse-id: message ${opts.message} is a broadcast, fetched from shared storage: it takes no --to`)
      const payload = broadcastBatch({ did: self.did, key: key.address }, ns, [{ topic, value: { reuses: opts.message }, messageId: opts.message }])
      const pin = await this.pin(key, { txId: payload.tx.id, batchId: payload.id, batchHash: payload.hash, payloadRef: await this.publish(payload), contexts: broadcastContexts(payload) })
      return { attack: 'reuse-id', message: opts.message, hash: payload.messages[0]!.hash, batchId: payload.id, deliveries: [], pin }
    }
    const group = await memberGet<{ members: { identity: string }[] }>(self, `${base}/groups/${groupHash}`)
    const inGroup = this.net.description.members.filter((m) => group.members.some((g) => g.identity === m.did))
    const to = opts.to === undefined ? inGroup : opts.to.map((org) => this.net.member(org))
    for (const m of to) if (!inGroup.includes(m)) throw new RogueError(`reuse-id: ${m.org} is not a member of group ${groupHash}`)
    // A topic of its own in the group: its first nonce is 0.
    const payload = privateBatch(self, { hash: groupHash as Hash, namespace: ns, name: '', members: [], created: now() }, [{ topic, value: { reuses: opts.message }, nonce: 0, messageId: opts.message }])
    const { deliveries, pin } = await this.deliverThenPin(self, key, to, payload)
    return { attack: 'reuse-id', message: opts.message, hash: payload.messages[0]!.hash, batchId: payload.id, group: groupHash, deliveries, pin }
  }

  /** reuseId with a datatype: a copy of the message's data item carried with other fields. */
  private async copyData(self: MemberDescription, opts: { message: string; to?: string[]; namespace: string; datatype: DatatypeRef }): Promise<ReuseIdResult> {
    const base = `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}`
    const items = await memberGet<{ id: string; hash: string; value: unknown; blob?: unknown }[]>(self, `${base}/messages/${encodeURIComponent(opts.message)}/data`).catch((err: unknown) => {
      throw new RogueError(`reuse-id: ${self.org} does not hold message ${opts.message} in namespace ${opts.namespace} (${(err as Error).message})`)
    })
    const item = items[0]
    if (!item || item.blob !== undefined) throw new RogueError(`reuse-id --datatype: message ${opts.message} carries no data item with a value alone to copy`)
    // The value as this node shows it, written again as a batch carries it: the copy must keep its hash.
    const valueRaw = compactJson(JSON.stringify(item.value))
    if (dataHash({ valueRaw }) !== item.hash) throw new RogueError(`reuse-id --datatype: the value of data ${item.id} does not hash to ${item.hash} once written again; it cannot be copied`)
    const copy = { topic: `reuse-${randomUUID().slice(0, 8)}`, valueRaw, dataId: item.id, datatype: opts.datatype }
    const key = await this.key({ org: self.org })
    const data = { id: item.id, datatype: opts.datatype }
    if (opts.to === undefined) {
      const payload = broadcastBatch({ did: self.did, key: key.address }, opts.namespace, [copy])
      const pin = await this.pin(key, { txId: payload.tx.id, batchId: payload.id, batchHash: payload.hash, payloadRef: await this.publish(payload), contexts: broadcastContexts(payload) })
      return { attack: 'reuse-id', message: opts.message, hash: payload.messages[0]!.hash, batchId: payload.id, data, deliveries: [], pin }
    }
    const to = [self, ...opts.to.map((org) => this.net.member(org)).filter((m) => m.org !== self.org)]
    const group = makeGroup(opts.namespace, `rogue-${randomUUID().slice(0, 8)}`, await Promise.all(to.map(async (m) => ({ identity: m.did, node: await this.nodeId(m) }))))
    const payload = privateBatch(self, group, [{ ...copy, value: undefined, nonce: 0 }], { withGroupinit: true })
    const { deliveries, pin } = await this.deliverThenPin(self, key, to, payload)
    return { attack: 'reuse-id', message: opts.message, hash: payload.messages[payload.messages.length - 1]!.hash, batchId: payload.id, group: group.hash, data, deliveries, pin }
  }

  /** Delivers a private batch of the member's own to `to`, one by one, then pins it (its masked contexts, no reference). */
  private async deliverThenPin(self: MemberDescription, key: Awaited<ReturnType<RogueMember['key']>>, to: readonly MemberDescription[], payload: BatchPayload): Promise<{ deliveries: ReuseIdResult['deliveries']; pin: PinSent }> {
    const exchange = new RogueExchange(layout(this.net.dir), self)
    const deliveries = []
    try {
      for (const m of to) deliveries.push(await exchange.deliver(m, payload))
    } finally {
      await exchange.stop()
    }
    const pin = await this.pin(key, { txId: payload.tx.id, batchId: payload.id, batchHash: payload.hash, payloadRef: '', contexts: privateContexts(payload) })
    return { deliveries, pin }
  }

  /**
   * Pins a group that pairs `org` with `node`, a node that is not its own (default: the first other org, paired
   * with the member's own node); the group also holds the member on its node and every other org on its own, so
   * that every member's node receives the groupinit. It is delivered to each (the member's own included), then pinned.
   */
  async foreignGroup(opts: { org?: string; node?: string; namespace?: string } = {}): Promise<ForeignGroupResult> {
    const self = this.member('foreign-group')
    const others = this.net.description.members.filter((m) => m.org !== self.org)
    const org = opts.org !== undefined ? this.net.member(opts.org) : others[0]
    if (!org) throw new RogueError('foreign-group: the network has no other org to pair')
    const host = opts.node !== undefined ? this.net.member(opts.node) : self
    if (host.org === org.org) throw new RogueError(`foreign-group: ${host.node} is ${org.org}'s own node; name another org's node`)
    const namespace = opts.namespace ?? 'default'
    const pairs = [...this.net.description.members.map((m) => ({ org: m, node: m })), { org, node: host }]
    const members = await Promise.all(pairs.map(async (p) => ({ identity: p.org.did, node: (await this.nodeId(p.node)) as IdentityId, nodeName: p.node.node })))
    const group = makeGroup(namespace, `rogue-${randomUUID().slice(0, 8)}`, members.map(({ identity, node }) => ({ identity, node })))
    const payload = privateBatch(self, group, [], { withGroupinit: true })
    const exchange = new RogueExchange(layout(this.net.dir), self)
    let deliveries
    try {
      // Its own node too: every member then holds the same batch, and reaches its own verdict on it.
      deliveries = await Promise.all(this.net.description.members.map((m) => exchange.deliver(m, payload)))
    } finally {
      await exchange.stop()
    }
    const key = await this.key({ org: self.org })
    const pin = await this.pin(key, { txId: payload.tx.id, batchId: payload.id, batchHash: payload.hash, payloadRef: '', contexts: privateContexts(payload) })
    return {
      attack: 'foreign-group',
      group: group.hash,
      namespace,
      members: members.map((m) => ({ identity: m.identity, node: m.nodeName })),
      paired: { org: org.org, node: host.node },
      groupinit: payload.messages[0]!.header.id,
      deliveries,
      pin,
    }
  }

  /**
   * Pins a private batch of the member's own twice, with its own key: as it is (its masked contexts, no reference),
   * then as a broadcast of the same id and hash naming a payload in shared storage that is no batch. The batch holds a
   * group of every member, each on its own node, its groupinit and one message on a topic of its own. It is delivered
   * first (before the pins) to the members in `first`, which hold it when they meet the broadcast pin; the others are
   * delivered it only once they have refused that pin's payload (within `timeoutMs`). Every member must confirm the
   * message alike (docs/architecture.md, "A private batch's pair pinned as a broadcast").
   */
  async repinPrivate(opts: { first?: string[]; namespace?: string; timeoutMs?: number } = {}): Promise<RepinPrivateResult> {
    const self = this.member('repin-private')
    const namespace = opts.namespace ?? 'default'
    const all = this.net.description.members
    const first = (opts.first ?? []).map((org) => this.net.member(org))
    const later = all.filter((m) => !first.includes(m))
    const group = makeGroup(namespace, `rogue-${randomUUID().slice(0, 8)}`, await Promise.all(all.map(async (m) => ({ identity: m.did, node: await this.nodeId(m) }))))
    const payload = privateBatch(self, group, [{ topic: `repin-${randomUUID().slice(0, 8)}`, value: { repinned: true }, nonce: 0 }], { withGroupinit: true })
    const key = await this.key({ org: self.org })
    const pair = { txId: payload.tx.id, batchId: payload.id, batchHash: payload.hash, contexts: privateContexts(payload) }
    const exchange = new RogueExchange(layout(this.net.dir), self)
    const deliveries: DeliveryOutcome[] = []
    try {
      for (const m of first) deliveries.push(await exchange.deliver(m, payload))
      const privatePin = await this.pin(key, { ...pair, payloadRef: '' })
      const broadcastPin = await this.pin(key, { ...pair, payloadRef: await this.upload('{"not":"a batch"}', 'junk.json') })
      const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
      for (const m of later) await this.refusedOn(m, payload, namespace, deadline)
      for (const m of later) deliveries.push(await exchange.deliver(m, payload))
      return { attack: 'repin-private', batchId: payload.id, group: group.hash, namespace, message: payload.messages[1]!.header.id, heldFirst: first.map((m) => m.org), deliveries, privatePin, broadcastPin }
    } finally {
      await exchange.stop()
    }
  }

  /** Waits until `m` has recorded the refusal of a payload pinned for the batch's (id, hash). */
  private async refusedOn(m: MemberDescription, b: BatchPayload, namespace: string, deadline: number): Promise<void> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/batches/${b.id}?hash=${b.hash}`
    for (;;) {
      const held = await memberGet<{ state: string }>(m, path).catch(() => undefined)
      if (held?.state === 'refused') return
      if (Date.now() > deadline) throw new RogueError(`repin-private: ${m.org} did not refuse the broadcast pin's payload of batch ${b.id} in time (it holds ${held ? `it, ${held.state}` : 'nothing of it'})`)
      await sleep(100)
    }
  }

  /**
   * Claims an org name (default: the one the network's next member will take, `org<N>`) from a key that is no
   * member's: the chain account, or (for a member, whose own key is taken) a fresh key funded from Hardhat's account
   * #0, which needs the chain to mine.
   */
  async claimName(opts: { name?: string } = {}): Promise<ClaimNameResult> {
    const name = opts.name ?? `org${this.net.description.members.length}`
    const key = await this.key('org' in this.signer ? { fresh: true } : this.signer)
    const payload = orgClaimBatch(name, key.address)
    const pin = await this.pin(key, { txId: payload.tx.id, batchId: payload.id, batchHash: payload.hash, payloadRef: await this.publish(payload), contexts: broadcastContexts(payload) })
    return { attack: 'claim-name', name, did: orgDid(name), claim: payload.messages[0]!.header.id, pin }
  }

  /** PUTs `count` blobs, `bytes` in all, that nothing refers to at `to`'s node, one after another. */
  async floodBlobs(opts: { to: string; bytes: number; count: number }): Promise<FloodBlobsResult> {
    const { to, bytesEach, sent } = await this.flood('flood-blobs', 'blobs', opts, async (exchange, to, size) => {
      const { hash, outcome } = await exchange.putBlob(to, size)
      return { id: hash, outcome }
    })
    return { attack: 'flood-blobs', to, blobs: opts.count, bytesEach, ...tally(sent), hashes: sent.map((x) => x.id) }
  }

  /**
   * Delivers to `to`, one after another, `count` valid private batches carrying `bytes` of data values in all, each in a
   * new group of the member and `to` (its groupinit and one message), and pins none: what only
   * quotas.unpinnedBatchBytesPerOrg (and, after its time, quotas.unpinnedBatchMs) bounds.
   */
  async floodBatches(opts: { to: string; bytes: number; count: number }): Promise<FloodBatchesResult> {
    let members: GroupMember[] | undefined
    const { to, bytesEach, sent } = await this.flood('flood-batches', 'values', opts, async (exchange, to, size) => {
      members ??= [
        { identity: exchange.from.did, node: await this.nodeId(exchange.from) },
        { identity: to.did, node: await this.nodeId(to) },
      ]
      const group = makeGroup('default', `flood-${randomUUID().slice(0, 8)}`, members)
      // A JSON string of `size` bytes, its quotes included.
      const payload = privateBatch(exchange.from, group, [{ topic: 'flood', value: 'x'.repeat(Math.max(0, size - 2)), nonce: 0 }], { withGroupinit: true })
      return { id: payload.id, outcome: await exchange.deliver(to, payload) }
    })
    return { attack: 'flood-batches', to, batches: opts.count, bytesEach, ...tally(sent), ids: sent.map((x) => x.id) }
  }

  /** Sends `count` things of `bytes` in all to `to`'s node, one after another, with the member's own certificate. */
  private async flood(
    verb: string,
    things: string,
    opts: { to: string; bytes: number; count: number },
    one: (exchange: RogueExchange, to: MemberDescription, bytes: number) => Promise<{ id: string; outcome: DeliveryOutcome }>,
  ): Promise<{ to: string; bytesEach: number; sent: { id: string; outcome: DeliveryOutcome }[] }> {
    const self = this.member(verb)
    const to = this.net.member(opts.to)
    if (to.org === self.org) throw new RogueError(`${verb}: ${self.org} cannot flood itself`)
    if (!Number.isSafeInteger(opts.count) || opts.count < 1) throw new RogueError(`${verb}: the count of ${things === 'blobs' ? 'blobs' : 'batches'} must be at least 1 (got ${opts.count})`)
    if (!Number.isSafeInteger(opts.bytes) || opts.bytes < opts.count) throw new RogueError(`${verb}: ${opts.bytes} bytes cannot make ${opts.count} ${things} of at least one byte`)
    const bytesEach = Math.ceil(opts.bytes / opts.count)
    const exchange = new RogueExchange(layout(this.net.dir), self)
    const sent: { id: string; outcome: DeliveryOutcome }[] = []
    try {
      for (let i = 0; i < opts.count; i++) sent.push(await one(exchange, to, bytesEach))
    } finally {
      await exchange.stop()
    }
    return { to: to.org, bytesEach, sent }
  }

  private member(verb: string): MemberDescription {
    if (!this.self) throw new RogueError(`${verb} is done by a member, with its node's certificate: name one (rogue org1 ${verb} ...), not a chain account`)
    return this.self
  }

  private key(source: KeySource) {
    return rogueKey(layout(this.net.dir), this.net.description.chain.rpc, source)
  }

  /** Uploads a broadcast batch to the network's shared storage; answers its reference. */
  private publish(payload: BatchPayload): Promise<string> {
    return this.upload(serializeBatch(payload), 'batch.json')
  }

  private async upload(text: string, name: string): Promise<string> {
    const storage = createIpfsStorage({ ...this.net.description.ipfs, log: () => {} })
    try {
      return await storage.upload(new TextEncoder().encode(text), name)
    } finally {
      await storage.stop()
    }
  }

  private async pin(key: Awaited<ReturnType<RogueMember['key']>>, args: PinArgs, tipAbove?: bigint): Promise<PinSent> {
    const { rpc, contract } = this.net.description.chain
    const sent = await sendPin(rpc, contract, key, args, tipAbove !== undefined ? { tipAbove } : {})
    return { signedWith: key.label, signer: key.address, ...args, ...sent }
  }

  /** A member node's identity id, as the network registered it (asked of the hostile member's node, or of that one). */
  private async nodeId(m: MemberDescription): Promise<IdentityId> {
    const asked = this.self ?? m
    const node = await memberGet<{ id: IdentityId }>(asked, `/api/v1/network/nodes/${encodeURIComponent(m.node)}`)
    return node.id
  }
}

/** How many of the things sent were stored and refused, and the first refusal's answer. */
function tally(sent: readonly { outcome: DeliveryOutcome }[]): { stored: number; refused: number; refusal?: string } {
  const refusals = sent.flatMap((x) => (x.outcome.stored ? [] : [x.outcome.refusal]))
  return { stored: sent.length - refusals.length, refused: refusals.length, ...(refusals.length > 0 ? { refusal: refusals[0]! } : {}) }
}
