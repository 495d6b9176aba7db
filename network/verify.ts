/**
 * `network -- verify`: checks that the members of a running network agree with each other and with the chain.
 *
 * What must hold (the ordering rules of docs/architecture.md): on every topic, each member confirms messages in the
 * order their pins are on the chain, so every member that receives a topic confirms it in the same order; a private
 * topic (a topic within a group) is received by the group's members only, and is ordered per author: each author's
 * messages by their nonces (the masked pins), so two authors' messages may settle in either order, as in FireFly. No
 * member confirms a message twice, and every member holds the same message (header hash) and data for it: ids and
 * hashes, and the fields a batch carries with each item that its hash does not cover (validator, datatype, creation
 * time, blob name and size, and a broadcast's blob reference), compared by their digests, which the pages of events
 * verify reads carry (`fetchdigests`, docs/api.md): no request per message.
 *
 * The work is split in two: `collect` reads the network (every member's settled messages, from its event log a page
 * at a time, and the chain's BatchPin logs), and `compare` is a pure function of what was read, so that its verdicts
 * are tested on fabricated views (test/unit/network/verify.test.ts) as well as on real networks.
 *
 * A message is known by its id and hash (`messageKey`): a member may send a message of its own under an id another
 * used, and the two are different messages, each with its own verdict (docs/architecture.md, "Ids reused with other
 * content"). `compare` takes the keys as they are given: the settled entries, the messages' map and the manifests use
 * the same ones.
 */
import type { MemberDescription, NetworkDescription } from './description.js'
import { chainPins, discoverNamespaces, memberGet, nsPath, pendingMessages, pinnedByItsKey, settledEvents, type ApiBatch, type ApiMessage, type ChainPin } from './inspect.js'

/** What verify knows of one message, as one member holds it. */
export interface MessageView {
  id: string
  namespace: string
  type: string
  txtype: string
  author: string
  topics: string[]
  group?: string
  batch?: string
  hash: string
  datahash: string
  data: DataView[]
  state: string
}

/**
 * A message's data item as one member holds it: its id and hash, and the digest of the fields its batch carried with
 * it (`fetchdigests`, docs/api.md; a private message's blob reference left out).
 */
export interface DataView {
  id: string
  hash: string
  digest?: string
}

/** What verify knows a message by: its id and its hash (two messages may share an id). */
export const messageKey = (id: string, hash: string): string => `${id}/${hash}`

/** A difference's message fields, from a message's key (an event without its message keys it by id alone). */
function about(key: string): { message: string; hash?: string } {
  const slash = key.indexOf('/')
  return slash < 0 ? { message: key } : { message: key.slice(0, slash), hash: key.slice(slash + 1) }
}

export interface MemberView {
  org: string
  node: string
  did: string
  /** Its message_confirmed / message_rejected events in its own order (event sequence), every namespace merged; `id` is the message's key. */
  settled: { id: string; outcome: 'confirmed' | 'rejected'; sequence: number }[]
  /** Every message it holds that verify looked at, by key: the settled ones and the pending ones. */
  messages: Map<string, MessageView>
  /** Set when the member could not be read: nothing else about it is compared. */
  unreachable?: string
}

export interface VerifyInput {
  /** BatchPin logs in chain order. */
  pins: readonly (Pick<ChainPin, 'batch' | 'block' | 'logIndex'> & Partial<Pick<ChainPin, 'signer' | 'batchHash'>>)[]
  /** Message keys of each batch, in manifest order. */
  manifests: ReadonlyMap<string, readonly string[]>
  /** The key and hash of each batch found pinned by its own key: then only a pin with both places the batch. */
  owners?: ReadonlyMap<string, { key: string; hash: string }>
  /** Each group's member orgs. */
  groups: ReadonlyMap<string, readonly string[]>
  members: readonly MemberView[]
}

export type DifferenceKind = 'order' | 'behind' | 'duplicate' | 'hash' | 'outcome' | 'not-pinned' | 'outsider' | 'unreachable'

export interface Difference {
  kind: DifferenceKind
  member?: string
  /** The topic it concerns, when it concerns one. */
  topic?: TopicKey
  /** The message it concerns: its id, and its hash (several messages may share an id). */
  message?: string
  hash?: string
  detail: string
}

export interface TopicKey {
  namespace: string
  topic: string
  /** Set for a private topic: the ordering context is the topic within the group... */
  group?: string
  /** ...and one author's messages on it (private pins order each author's sends by their own nonces). */
  author?: string
}

export interface TopicSummary extends TopicKey {
  /** Members that receive the topic. */
  members: string[]
  /** Pinned messages on the topic, in chain order. */
  messages: number
}

export interface VerifyReport {
  /** False when any difference counts (with `allowBehind`, members that are only behind do not). */
  ok: boolean
  members: string[]
  namespaces: string[]
  topics: TopicSummary[]
  /** Distinct settled messages across the members. */
  messages: number
  /** BatchPin logs on the chain. */
  pins: number
  differences: Difference[]
  /** Differences that do not count (members behind, with `allowBehind`). */
  notes: Difference[]
}

export interface VerifyOptions {
  /** Members known to be unable to answer (paused, not running), by org: reported as unreachable without asking. */
  unavailable?: Record<string, string>
  /** Namespaces to look at besides `default`, `svc_system` and those found from the chain's pins. */
  namespaces?: string[]
  /** A member that has confirmed a prefix of a topic is reported in `notes` rather than as a difference. */
  allowBehind?: boolean
}

const BROADCAST_TYPES = new Set(['broadcast', 'definition'])

export const keyText = (k: TopicKey): string => `${k.namespace}/${k.topic}${k.group ? ` (group ${short(k.group)}${k.author ? `, from ${k.author}` : ''})` : ''}`
const keyId = (k: TopicKey): string => JSON.stringify([k.namespace, k.group ?? '', k.author ?? '', k.topic])
export const short = (id: string): string => (id.length > 12 ? id.slice(0, 8) : id)

/** The verdict on what was read; pure. */
export function compare(input: VerifyInput, opts: Pick<VerifyOptions, 'allowBehind'> = {}): Omit<VerifyReport, 'namespaces' | 'pins'> {
  const differences: Difference[] = []
  const notes: Difference[] = []
  const live = input.members.filter((m) => m.unreachable === undefined)
  for (const m of input.members) {
    if (m.unreachable !== undefined) differences.push({ kind: 'unreachable', member: m.org, detail: `${m.org} could not be read: ${m.unreachable}` })
  }

  // Where each batch is on the chain: its first pin (a batch pinned again later keeps its first place) signed by its
  // own key with its own hash. Anyone may pin a batch's id first: such a pin places nothing.
  const batchPlace = new Map<string, number>()
  input.pins.forEach((p, i) => {
    const owner = input.owners?.get(p.batch)
    if (owner && p.signer !== undefined && (p.signer.toLowerCase() !== owner.key.toLowerCase() || p.batchHash !== owner.hash)) return
    if (!batchPlace.has(p.batch)) batchPlace.set(p.batch, i)
  })
  const position = (key: string, msg: MessageView): [number, number] | undefined => {
    if (msg.batch === undefined) return undefined
    const at = batchPlace.get(msg.batch)
    if (at === undefined) return undefined
    const index = input.manifests.get(msg.batch)?.indexOf(key) ?? -1
    return index < 0 ? undefined : [at, index]
  }

  // Every message some member holds, as the first member holding it has it.
  const known = new Map<string, MessageView>()
  for (const m of live) for (const [id, msg] of m.messages) if (!known.has(id)) known.set(id, msg)

  // No message settled twice by one member; settled the same way (confirmed or rejected) everywhere.
  const outcomes = new Map<string, Map<string, string>>()
  for (const m of live) {
    const seen = new Set<string>()
    for (const s of m.settled) {
      if (seen.has(s.id)) {
        differences.push({ kind: 'duplicate', member: m.org, ...about(s.id), detail: `${m.org} settled message ${s.id} more than once (event sequence ${s.sequence})` })
        continue
      }
      seen.add(s.id)
      const o = outcomes.get(s.id) ?? new Map<string, string>()
      o.set(m.org, s.outcome)
      outcomes.set(s.id, o)
    }
  }
  for (const [id, byMember] of outcomes) {
    if (new Set(byMember.values()).size > 1) {
      differences.push({ kind: 'outcome', ...about(id), detail: `message ${id} is ${[...byMember].map(([org, o]) => `${o} on ${org}`).join(', ')}` })
    }
  }

  // The same message and data on every member that settled it.
  for (const [id, byMember] of outcomes) {
    const versions = new Map<string, string[]>()
    for (const m of live) {
      const msg = m.messages.get(id)
      if (!msg || !byMember.has(m.org)) continue
      const fingerprint = JSON.stringify({ hash: msg.hash, datahash: msg.datahash, data: msg.data })
      versions.set(fingerprint, [...(versions.get(fingerprint) ?? []), m.org])
    }
    if (versions.size > 1) {
      const parts = [...versions].map(([f, orgs]) => {
        const v = JSON.parse(f) as { hash: string; datahash: string; data: DataView[] }
        return `${orgs.join(', ')}: hash ${short(v.hash)}, datahash ${short(v.datahash)}, data ${v.data.map((x) => `${short(x.id)}=${short(x.hash)}${x.digest ? ` (carried ${short(x.digest)})` : ''}`).join(' ')}`
      })
      differences.push({ kind: 'hash', ...about(id), detail: `message ${id} differs between members: ${parts.join('; ')}` })
    }
  }

  // Topics: which pinned messages are on each, in chain order, and who receives them.
  const topics = new Map<string, { key: TopicKey; receivers: string[]; chain: string[] }>()
  const placed = new Map<string, [number, number]>()
  for (const [messageKey, msg] of known) {
    if (msg.txtype === 'none') continue
    const pos = position(messageKey, msg)
    if (pos === undefined) continue
    placed.set(messageKey, pos)
    const isPrivate = !BROADCAST_TYPES.has(msg.type)
    for (const topic of msg.topics) {
      const key: TopicKey = { namespace: msg.namespace, topic, ...(isPrivate && msg.group ? { group: msg.group, author: msg.author } : {}) }
      const id = keyId(key)
      let t = topics.get(id)
      if (!t) {
        const receivers = key.group ? receiversOf(key.group, input, live) : input.members.map((m) => m.org)
        t = { key, receivers, chain: [] }
        topics.set(id, t)
      }
      t.chain.push(messageKey)
    }
  }
  const byPlace = (a: string, b: string): number => {
    const [pa, pb] = [placed.get(a)!, placed.get(b)!]
    return pa[0] - pb[0] || pa[1] - pb[1]
  }
  for (const t of topics.values()) t.chain.sort(byPlace)

  // A pinned message settled by a member before its pin is on the chain cannot have been ordered by it.
  for (const m of live) {
    for (const s of m.settled) {
      const msg = m.messages.get(s.id) ?? known.get(s.id)
      if (!msg || msg.txtype === 'none' || placed.has(s.id)) continue
      const why = msg.batch === undefined ? 'it has no batch' : batchPlace.has(msg.batch) ? `its batch ${msg.batch} does not list it` : `its batch ${msg.batch} is not pinned on the chain`
      differences.push({ kind: 'not-pinned', member: m.org, ...about(s.id), detail: `${m.org} ${s.outcome} message ${s.id} (${msg.type}, ${msg.txtype}) but ${why}` })
    }
  }

  // Each receiver's order on each topic against the chain's.
  const summaries: TopicSummary[] = []
  for (const t of [...topics.values()].sort((a, b) => keyText(a.key).localeCompare(keyText(b.key)))) {
    summaries.push({ ...t.key, members: t.receivers, messages: t.chain.length })
    const onTopic = new Set(t.chain)
    for (const m of live) {
      const mine: string[] = []
      const seen = new Set<string>()
      for (const s of m.settled) {
        if (!onTopic.has(s.id) || seen.has(s.id)) continue
        seen.add(s.id)
        mine.push(s.id)
      }
      if (!t.receivers.includes(m.org)) {
        if (mine.length > 0) differences.push({ kind: 'outsider', member: m.org, topic: t.key, detail: `${m.org} is not in the group but settled ${mine.length} of its messages on ${keyText(t.key)}` })
        continue
      }
      const agree = mine.every((id, i) => t.chain[i] === id)
      if (agree && mine.length === t.chain.length) continue
      if (agree) {
        const next = known.get(t.chain[mine.length]!)
        const d: Difference = {
          kind: 'behind',
          member: m.org,
          topic: t.key,
          ...about(t.chain[mine.length]!),
          detail: `${m.org} has settled ${mine.length} of the ${t.chain.length} messages pinned on ${keyText(t.key)}, in chain order; next on the chain: ${t.chain[mine.length]}${next ? ` from ${orgOf(next.author)}` : ''}`,
        }
        if (opts.allowBehind) notes.push(d)
        else differences.push(d)
        continue
      }
      const i = mine.findIndex((id, j) => t.chain[j] !== id)
      differences.push({
        kind: 'order',
        member: m.org,
        topic: t.key,
        ...about(mine[i]!),
        detail:
          `${m.org} settled ${keyText(t.key)} out of chain order: at position ${i + 1} it has ${mine[i]} where the chain has ${t.chain[i] ?? '(nothing)'}` +
          `\n      chain:   ${listIds(t.chain, i)}\n      ${m.org.padEnd(8)} ${listIds(mine, i)}`,
      })
    }
  }

  return {
    ok: differences.length === 0,
    members: input.members.map((m) => m.org),
    topics: summaries,
    messages: outcomes.size,
    differences,
    notes,
  }
}

/** A group's receiving orgs: as the group lists them, or else the members holding any of its messages. */
function receiversOf(group: string, input: VerifyInput, live: readonly MemberView[]): string[] {
  const listed = input.groups.get(group)
  if (listed) return input.members.map((m) => m.org).filter((org) => listed.includes(org))
  return live.filter((m) => [...m.messages.values()].some((x) => x.group === group)).map((m) => m.org)
}

const orgOf = (did: string): string => did.replace(/^did:firefly:org\//, '')

/** Ids around position i, the differing one marked. */
function listIds(ids: readonly string[], i: number): string {
  const from = Math.max(0, i - 2)
  const shown = ids.slice(from, i + 3).map((id, j) => (from + j === i ? `[${short(id)}]` : short(id)))
  return `${from > 0 ? '… ' : ''}${shown.join(' ')}${i + 3 < ids.length ? ' …' : ''}`
}

/** Reads the network: every member first, then the chain (pins only grow, so nothing a member settled is missed). */
export async function collect(d: NetworkDescription, opts: VerifyOptions = {}): Promise<{ input: VerifyInput; namespaces: string[] }> {
  // Namespaces are found from the pins on chain; the pins read for that come before the members' events, so a
  // batch pinned in between is found by the second read of the chain below, or not needed.
  const early = await chainPins(d)
  const unavailable = opts.unavailable ?? {}
  const asked = d.members.filter((m) => unavailable[m.org] === undefined)
  const found = await discoverNamespaces(d, early.pins, opts.namespaces ?? [], asked)
  const members = await Promise.all(d.members.map((m) => readMember(m, found.namespaces, unavailable[m.org] ?? found.unreachable.get(m.org))))
  const { pins } = await chainPins(d)

  const manifests = new Map<string, string[]>()
  const owners = new Map<string, { key: string; hash: string }>()
  const record = (b: ApiBatch): void => {
    // A batch of its id read before stands, unless this one is the one its own key pinned (see pinnedByItsKey).
    const own = pinnedByItsKey(pins, b)
    if (manifests.has(b.id) && (owners.has(b.id) || !own)) return
    manifests.set(b.id, b.manifest.messages.map((x) => messageKey(x.id, x.hash)))
    if (own) owners.set(b.id, { key: b.key!, hash: b.hash! })
  }
  for (const b of found.batches.values()) record(b)
  // Batches sealed or received after the namespaces were listed, asked of the members that could be read: one
  // paused would hold each request until its timeout.
  const missing = new Set<string>()
  for (const m of members) for (const msg of m.messages.values()) if (msg.batch && !manifests.has(msg.batch)) missing.add(msg.batch)
  const readable = d.members.filter((m) => members.find((v) => v.org === m.org)?.unreachable === undefined)
  for (const id of missing) {
    for (const m of readable) {
      const b = await memberGet<ApiBatch>(m, `/api/v1/batches/${id}`).catch(() => undefined)
      if (b) record(b)
      if (owners.has(id)) break
    }
  }

  const groups = new Map<string, string[]>()
  for (const view of members) {
    const member = d.members.find((x) => x.org === view.org)!
    for (const msg of view.messages.values()) {
      if (!msg.group || groups.has(msg.group)) continue
      const g = await memberGet<{ members: { identity: string }[] }>(member, `${nsPath(msg.namespace)}/groups/${msg.group}`).catch(() => undefined)
      if (g) groups.set(msg.group, g.members.map((x) => orgOf(x.identity)))
    }
  }
  return { input: { pins, manifests, owners, groups, members }, namespaces: found.namespaces }
}

async function readMember(m: MemberDescription, namespaces: readonly string[], unreachable: string | undefined): Promise<MemberView> {
  const view: MemberView = { org: m.org, node: m.node, did: m.did, settled: [], messages: new Map() }
  if (unreachable !== undefined) return { ...view, unreachable }
  try {
    for (const ns of namespaces) {
      for (const e of await settledEvents(m, ns, 0, true)) {
        // The event's message is the one its verdict was about (by id and hash), as the member enriches it.
        const key = e.message ? messageKey(e.reference, e.message.hash) : e.reference
        view.settled.push({ id: key, outcome: e.type === 'message_rejected' ? 'rejected' : 'confirmed', sequence: e.sequence })
        if (e.message) view.messages.set(key, messageView(e.message))
      }
      for (const msg of await pendingMessages(m, ns)) {
        const key = messageKey(msg.header.id, msg.hash)
        if (!view.messages.has(key)) view.messages.set(key, messageView(msg))
      }
    }
  } catch (err) {
    return { ...view, settled: [], messages: new Map(), unreachable: (err as Error).message }
  }
  view.settled.sort((a, b) => a.sequence - b.sequence)
  return view
}

export function messageView(msg: ApiMessage): MessageView {
  return {
    id: msg.header.id,
    namespace: msg.header.namespace,
    type: msg.header.type,
    txtype: msg.header.txtype,
    author: msg.header.author,
    topics: msg.header.topics,
    ...(msg.header.group ? { group: msg.header.group } : {}),
    ...(msg.batch ? { batch: msg.batch } : {}),
    hash: msg.hash,
    datahash: msg.header.datahash,
    data: msg.data.map((x) => ({ id: x.id, hash: x.hash, ...(x.digest ? { digest: x.digest } : {}) })),
    state: msg.state,
  }
}

/** Reads the network and compares. */
export async function verifyNetwork(d: NetworkDescription, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const { input, namespaces } = await collect(d, opts)
  return { ...compare(input, opts), namespaces, pins: input.pins.length }
}

/** The report in words: one summary line, then every difference. */
export function formatVerify(r: VerifyReport): string {
  const lines: string[] = []
  const privateTopics = r.topics.filter((t) => t.group).length
  lines.push(
    `verify: ${r.members.length} members (${r.members.join(', ')}); namespaces ${r.namespaces.join(', ')}; ` +
      `${plural(r.topics.length, 'topic')} (${r.topics.length - privateTopics} broadcast, ${privateTopics} private); ${plural(r.messages, 'settled message')}; ${plural(r.pins, 'pin')} on chain`,
  )
  if (r.ok) lines.push(r.notes.length === 0 ? 'OK: every member agrees with the chain' : `OK, but ${plural(r.notes.length, 'note')}:`)
  else lines.push(`DIFFERS: ${plural(r.differences.length, 'difference')}`)
  for (const d of r.differences) lines.push(`  ${d.kind.padEnd(11)} ${d.detail}`)
  for (const d of r.notes) lines.push(`  ${d.kind.padEnd(11)} ${d.detail}`)
  return lines.join('\n')
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`
