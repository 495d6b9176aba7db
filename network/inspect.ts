/**
 * Reading a running network from outside, as a test suite or an operator does: member APIs over HTTP and the
 * chain's BatchPin logs over JSON-RPC. Used by verify, trace and the suite helper; nothing here changes anything.
 */
import type { MemberDescription, NetworkDescription } from './description.js'
import { BATCH_PIN_TOPIC, decodeBatchPinLog, type RpcLog } from '../node/chain/abi.js'
import { rpcCall } from './probe.js'
import { BATCH_PIN_ACTION } from '../node/model/index.js'

/** An HTTP failure with what the member said. */
export class MemberHttpError extends Error {
  constructor(
    readonly member: string,
    readonly status: number | undefined,
    message: string,
  ) {
    super(message)
  }
}

const DEFAULT_TIMEOUT_MS = 10_000

/**
 * One JSON request to a member. A member that does not answer within the timeout (paused, or stuck) and one that
 * refuses the connection (not running) are named as such; any status is answered, the caller decides.
 */
export async function memberRequest<T>(
  m: Pick<MemberDescription, 'org' | 'api'>,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  let res: Response
  try {
    res = await fetch(`${m.api}${path}`, {
      method,
      headers: body !== undefined ? { ...headers, 'content-type': 'application/json' } : headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } }
    if (e.name === 'TimeoutError') throw new MemberHttpError(m.org, undefined, `${m.org} did not answer ${method} ${path} within ${timeoutMs / 1000} s (paused or stuck?)`)
    const code = e.cause?.code
    if (code === 'ECONNREFUSED') throw new MemberHttpError(m.org, undefined, `${m.org} is not running (connection refused at ${m.api})`)
    throw new MemberHttpError(m.org, undefined, `${m.org}: ${method} ${path} failed: ${code ?? e.message}`)
  }
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    // not JSON: answered as text
  }
  return { status: res.status, body: parsed as T }
}

/** A GET that must answer 200. */
export async function memberGet<T>(m: Pick<MemberDescription, 'org' | 'api'>, path: string, timeoutMs?: number): Promise<T> {
  const r = await memberRequest<T>(m, 'GET', path, undefined, timeoutMs)
  if (r.status !== 200) throw new MemberHttpError(m.org, r.status, `${m.org}: GET ${path} answered ${r.status} ${errorText(r.body)}`)
  return r.body
}

export function errorText(body: unknown): string {
  if (body && typeof body === 'object' && 'error' in body) return String((body as { error: unknown }).error)
  // An empty body (parsed as undefined) is no words at all: JSON.stringify would answer undefined, not a string.
  if (body === undefined) return '(no body)'
  return typeof body === 'string' ? body.slice(0, 300) : JSON.stringify(body)
}

export const nsPath = (ns: string): string => `/api/v1/namespaces/${encodeURIComponent(ns)}`

/** A message as the member API presents it (the parts these tools read). */
export interface ApiMessage {
  header: { id: string; type: string; txtype: string; author: string; namespace: string; topics: string[]; tag?: string; group?: string; datahash: string; created?: string }
  hash: string
  batch?: string
  state: string
  confirmed?: string
  rejectReason?: string
  /** With `fetchdigests` (events only, Parley-only): the digest of what each item's batch carried with it. */
  data: { id: string; hash: string; digest?: string }[]
  pins?: string[]
}

export interface ApiEvent {
  id: string
  sequence: number
  type: string
  namespace: string
  reference: string
  topic?: string
  created: string
  message?: ApiMessage
}

export interface ApiBatch {
  id: string
  namespace: string
  type: string
  author: string
  group?: string
  /** The key that signed it, and its manifest hash. */
  key?: string
  hash?: string
  manifest: { messages: { id: string; hash: string; topics?: number }[] }
  state: string
}

const PAGE = 1000

/**
 * The member's settled messages of a namespace (message_confirmed and message_rejected events, with the message),
 * in its confirmation order: read a page at a time by event sequence, so a long history costs one request per
 * thousand events and a page boundary never skips or repeats one. `digests`: each message's data items with the
 * digests of what their batches carried (Parley's `fetchdigests`).
 */
export async function settledEvents(m: Pick<MemberDescription, 'org' | 'api'>, ns: string, after = 0, digests = false): Promise<ApiEvent[]> {
  const out: ApiEvent[] = []
  let last = after
  for (;;) {
    const page = await memberGet<ApiEvent[]>(
      m,
      `${nsPath(ns)}/events?type=message_confirmed&type=message_rejected&sequence=%3E${last}&sort=sequence&limit=${PAGE}&fetchreferences=true${digests ? '&fetchdigests=true' : ''}`,
      30_000,
    )
    out.push(...page)
    if (page.length < PAGE) return out
    last = page[page.length - 1]!.sequence
  }
}

/** The member's pending messages of a namespace (not confirmed or rejected yet). */
export async function pendingMessages(m: MemberDescription, ns: string): Promise<ApiMessage[]> {
  const out: ApiMessage[] = []
  for (let skip = 0; ; skip += PAGE) {
    const page = await memberGet<ApiMessage[]>(m, `${nsPath(ns)}/messages?pending=true&limit=${PAGE}&skip=${skip}`, 30_000)
    out.push(...page)
    if (page.length < PAGE) return out
  }
}

/** The member's batches of a namespace, with their manifests. */
export async function batchesOf(m: MemberDescription, ns: string): Promise<ApiBatch[]> {
  const out: ApiBatch[] = []
  for (let skip = 0; ; skip += PAGE) {
    const page = await memberGet<ApiBatch[]>(m, `${nsPath(ns)}/batches?limit=${PAGE}&skip=${skip}`, 30_000)
    out.push(...page)
    if (page.length < PAGE) return out
  }
}

/** One pinned batch, as the chain orders it. */
export interface ChainPin {
  batch: string
  block: number
  txIndex: number
  logIndex: number
  txHash: string
  /** The key that signed it, lowercase. */
  signer: string
  batchHash: string
  /** Empty for a private batch. */
  payloadRef: string
  contexts: string[]
}

/**
 * Every BatchPin log of the network's contract, in chain order (block, transaction, log), read from the chain
 * itself rather than from any member: what each member should have confirmed is decided here.
 */
export async function chainPins(d: NetworkDescription): Promise<{ pins: ChainPin[]; head: number }> {
  const head = Number(await rpcCall<string>(d.chain.rpc, 'eth_blockNumber', []))
  if (!Number.isFinite(head)) throw new Error(`the chain at ${d.chain.rpc} did not answer eth_blockNumber`)
  const pins: ChainPin[] = []
  const STEP = 10_000
  for (let from = d.chain.firstBlock; from <= head; from += STEP) {
    const to = Math.min(head, from + STEP - 1)
    const logs = await rpcCall<RpcLog[]>(d.chain.rpc, 'eth_getLogs', [{ address: d.chain.contract, topics: [BATCH_PIN_TOPIC], fromBlock: hex(from), toBlock: hex(to) }])
    for (const log of logs ?? []) {
      if (log.removed) continue
      let e
      try {
        e = decodeBatchPinLog(log)
      } catch {
        continue
      }
      // Only batch pins order messages (as the members' pin ingest reads them); a network action pins no batch.
      if (e.action !== BATCH_PIN_ACTION || e.contexts.length === 0) continue
      pins.push({ batch: e.batchId, block: e.blockNumber, txIndex: e.txIndex, logIndex: e.logIndex, txHash: e.txHash, signer: e.author, batchHash: e.batchHash, payloadRef: e.payloadRef, contexts: e.contexts })
    }
  }
  pins.sort((a, b) => a.block - b.block || a.txIndex - b.txIndex || a.logIndex - b.logIndex)
  return { pins, head }
}

const hex = (n: number): string => `0x${n.toString(16)}`

/** Namespaces always looked at: the default one and the system namespace definitions travel in. */
export const BASE_NAMESPACES = ['default', 'svc_system'] as const

/**
 * The namespaces in use on the network, with every member's batches in them. The API has no list of namespaces (any
 * name works without configuration), so they are found from the chain: every pinned batch is looked up on a member
 * that holds it, and its namespace's batches are then listed on every member (one request per thousand batches),
 * until every pinned batch some member holds is accounted for. A namespace whose messages were all unpinned
 * (`txtype: none`) has no pin to be found by: name it in `extra`.
 */
/**
 * Whether the chain holds a pin of batch `b` signed by its own key with its own hash. Anyone may pin a batch's id, and
 * a member may hold a batch of another's under an id it learned: the batch pinned by its own key is the real one.
 */
export function pinnedByItsKey(pins: readonly Pick<ChainPin, 'batch' | 'signer' | 'batchHash'>[], b: Pick<ApiBatch, 'id' | 'key' | 'hash'>): boolean {
  return b.key !== undefined && pins.some((p) => p.batch === b.id && p.signer === b.key!.toLowerCase() && p.batchHash === b.hash)
}

export async function discoverNamespaces(
  d: NetworkDescription,
  pins: readonly ChainPin[],
  extra: readonly string[] = [],
  members: readonly MemberDescription[] = d.members,
): Promise<{ namespaces: string[]; batches: Map<string, ApiBatch>; unreachable: Map<string, string> }> {
  const namespaces: string[] = []
  const batches = new Map<string, ApiBatch>()
  const unreachable = new Map<string, string>()
  const live = (): MemberDescription[] => members.filter((m) => !unreachable.has(m.org))
  /** Whether `b` should replace `held`, the batch of its id read so far: the first read, or the one its key pinned. */
  const preferred = (held: ApiBatch | undefined, b: ApiBatch): boolean => held === undefined || (!pinnedByItsKey(pins, held) && pinnedByItsKey(pins, b))
  const add = async (ns: string): Promise<void> => {
    if (namespaces.includes(ns)) return
    namespaces.push(ns)
    await Promise.all(
      live().map(async (m) => {
        try {
          for (const b of await batchesOf(m, ns)) if (preferred(batches.get(b.id), b)) batches.set(b.id, b)
        } catch (err) {
          unreachable.set(m.org, (err as Error).message)
        }
      }),
    )
  }
  for (const ns of [...BASE_NAMESPACES, ...extra]) await add(ns)
  const looked = new Set<string>()
  for (const pin of pins) {
    if (batches.has(pin.batch) || looked.has(pin.batch)) continue
    looked.add(pin.batch)
    for (const m of live()) {
      const r = await memberRequest<ApiBatch>(m, 'GET', `/api/v1/batches/${pin.batch}`).catch((err: Error) => {
        unreachable.set(m.org, err.message)
        return undefined
      })
      if (r?.status === 200) {
        batches.set(r.body.id, r.body)
        await add(r.body.namespace)
        break
      }
    }
  }
  return { namespaces, batches, unreachable }
}
