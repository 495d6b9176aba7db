import { createHash } from 'node:crypto'
import type { MemberDescription } from '../../network/description.js'
import { Broken, waitUntil } from './wait.js'

/** The parts of the member API the broadcast tests read, in the shapes the nodes answer with. */
export interface ApiMessage {
  header: {
    id: string
    cid?: string
    type: string
    txtype: string
    author: string
    key: string
    created: string
    namespace: string
    topics: string[]
    topic?: string[]
    tag?: string
    group?: string
    datahash: string
  }
  localNamespace?: string
  hash: string
  batch?: string
  txid?: string
  state: string
  confirmed?: string
  rejectReason?: string
  data: { id: string; hash: string; value?: unknown; validator?: string }[]
  pins?: string[]
  idempotencyKey?: string
}

export interface ApiData {
  id: string
  validator: string
  namespace: string
  hash: string
  created: string
  value: unknown
}

export interface ApiEvent {
  id: string
  sequence: number
  type: string
  namespace: string
  reference: string
  tx?: string
  topic?: string
  created: string
  message?: ApiMessage
}

export interface ApiBatch {
  id: string
  type: string
  namespace: string
  author: string
  key: string
  hash: string
  manifest: { version?: number; id?: string; messages: { id: string; hash: string; topics: number }[]; data?: { id: string; hash: string }[] }
  payloadRef?: string
  state: 'sealed' | 'uploaded' | 'pinned' | 'received' | 'refused'
  reason?: string
}

export interface ApiChainEvent {
  id: string
  sequence: number
  protocolId: string
  output: { author: string; batchHash: string; payloadRef: string; contexts: string[]; uuids: string; action: string }
  info: { blockNumber: string; transactionIndex: string; logIndex: string }
  batch: string
}

export interface Reply<T> {
  status: number
  body: T
  contentType: string
}

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

/** A short random suffix so that topics and namespaces of one run never meet those of another. */
export const runId = (): string => Math.random().toString(36).slice(2, 8)

/** The namespaced API base of a member; `default` is also served without the namespace segment. */
export function nsBase(m: MemberDescription, ns: string): string {
  return `${m.api}/api/v1/namespaces/${ns}`
}

export async function request<T = unknown>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
  const init: RequestInit = { method, headers: { ...headers } }
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body)
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) (init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const res = await fetch(url, init)
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = text
  }
  return { status: res.status, body: parsed as T, contentType: res.headers.get('content-type') ?? '' }
}

export const get = <T>(url: string): Promise<Reply<T>> => request<T>('GET', url)

/** Broadcasts one message; `body` is sent as given (a string is sent verbatim). */
export function broadcast(m: MemberDescription, ns: string, body: unknown, opts: { confirm?: boolean } = {}): Promise<Reply<ApiMessage>> {
  return request<ApiMessage>('POST', `${nsBase(m, ns)}/messages/broadcast${opts.confirm ? '?confirm=true' : ''}`, body)
}

/** Broadcasts and insists on the 202; answers the accepted message. */
export async function send(m: MemberDescription, ns: string, topic: string, value: unknown, tag?: string): Promise<ApiMessage> {
  const r = await broadcast(m, ns, { header: { topics: [topic], ...(tag ? { tag } : {}) }, data: [{ value }] })
  if (r.status !== 202) throw new Error(`${m.org}: broadcast on ${topic} answered ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

/**
 * The member's message_confirmed events of a namespace, oldest first (insertion sequence). Events out of sequence
 * throw Broken, which ends a waitUntil at once; a failed request throws a plain Error (not yet).
 */
export async function confirmedEvents(m: MemberDescription, ns: string): Promise<ApiEvent[]> {
  const r = await get<ApiEvent[]>(`${nsBase(m, ns)}/events?type=message_confirmed&sort=sequence&limit=1000`)
  if (r.status !== 200) throw new Error(`${m.org}: GET events answered ${r.status} ${JSON.stringify(r.body)}`)
  for (let i = 1; i < r.body.length; i++) {
    if (!(r.body[i]!.sequence > r.body[i - 1]!.sequence)) throw new Broken(`${m.org}: events not in ascending sequence at ${i}`)
  }
  return r.body
}

/** Per topic, the ids of `ids` in the order this member confirmed them (its event sequence). */
export async function confirmationOrder(m: MemberDescription, ns: string, topicOf: Map<string, string>): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  const seen = new Set<string>()
  for (const e of await confirmedEvents(m, ns)) {
    const t = topicOf.get(e.reference)
    if (t === undefined) continue
    if (seen.has(e.reference)) throw new Error(`${m.org}: message ${e.reference} confirmed twice`)
    seen.add(e.reference)
    if (e.topic !== t) throw new Error(`${m.org}: event ${e.id} of message ${e.reference} has topic ${e.topic}, expected ${t}`)
    out.set(t, [...(out.get(t) ?? []), e.reference])
  }
  return out
}

/** Polls a member until it holds the message in one of `states`; answers it as last read. */
export async function messageReaching(m: MemberDescription, ns: string, id: string, states: string[], timeoutMs = 60_000): Promise<ApiMessage> {
  let last: ApiMessage | undefined
  await waitUntil(`${m.org} to hold ${id} ${states.join(' or ')}`, async () => {
    const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${id}`)
    last = r.status === 200 ? r.body : undefined
    return last !== undefined && states.includes(last.state)
  }, { timeoutMs, intervalMs: 150 })
  return last!
}

/**
 * Waits until the member has a message_confirmed event for every id; the timeout names how many it had. Events out
 * of sequence fail it at once.
 */
export async function waitConfirmedAll(m: MemberDescription, ns: string, ids: Iterable<string>, timeoutMs = 60_000): Promise<void> {
  const want = new Set(ids)
  let seen = 0
  try {
    await waitUntil(
      `${m.org} to confirm ${want.size} messages in ${ns}`,
      async () => {
        const got = new Set((await confirmedEvents(m, ns)).map((e) => e.reference))
        seen = [...want].filter((id) => got.has(id)).length
        return seen === want.size
      },
      { timeoutMs, intervalMs: 200 },
    )
  } catch (err) {
    if (err instanceof Broken) throw err
    throw new Error(`${(err as Error).message} (had ${seen} of ${want.size})`)
  }
}

/**
 * The on-chain pin order of `ids`, per topic, as one member read the chain: BatchPin events in chain order
 * (protocolId), each broadcast batch once (the first pin of a batch orders it), each batch's manifest in order.
 * Also answers the batches holding those messages, with their pin event, for further checks.
 */
export async function pinOrder(
  m: MemberDescription,
  ns: string,
  topicOf: Map<string, string>,
): Promise<{ order: Map<string, string[]>; batches: { event: ApiChainEvent; batch: ApiBatch }[] }> {
  const r = await get<ApiChainEvent[]>(`${m.api}/api/v1/blockchainevents?limit=1000`)
  if (r.status !== 200) throw new Error(`${m.org}: GET blockchainevents answered ${r.status}`)
  const events = [...r.body].sort((a, b) => (a.protocolId < b.protocolId ? -1 : a.protocolId > b.protocolId ? 1 : 0))
  const order = new Map<string, string[]>()
  const batches: { event: ApiChainEvent; batch: ApiBatch }[] = []
  const seenBatch = new Set<string>()
  const seenMsg = new Set<string>()
  for (const e of events) {
    if (e.output.payloadRef === '' || seenBatch.has(e.batch)) continue
    seenBatch.add(e.batch)
    const b = await get<ApiBatch>(`${nsBase(m, ns)}/batches/${e.batch}`)
    if (b.status !== 200) throw new Error(`${m.org}: batch ${e.batch} pinned on chain is not known (${b.status})`)
    let ours = false
    for (const entry of b.body.manifest.messages) {
      const t = topicOf.get(entry.id)
      if (t === undefined) continue
      if (seenMsg.has(entry.id)) throw new Error(`message ${entry.id} is in two pinned batches`)
      seenMsg.add(entry.id)
      ours = true
      order.set(t, [...(order.get(t) ?? []), entry.id])
    }
    if (ours) batches.push({ event: e, batch: b.body })
  }
  return { order, batches }
}

/** Groups ids by topic, keeping the order given. */
export function byTopic(ids: string[], topicOf: Map<string, string>): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const id of ids) {
    const t = topicOf.get(id)!
    out.set(t, [...(out.get(t) ?? []), id])
  }
  return out
}

/** A Map as a plain object, so chai's deep equality prints something readable. */
export const plain = (m: Map<string, string[]>): Record<string, string[]> => Object.fromEntries([...m.entries()].sort(([a], [b]) => a.localeCompare(b)))
