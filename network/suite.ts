/**
 * What an integration suite of a multi-org application needs from the local network, beside the controls:
 *
 * - `waitConfirmed(net, id)`: until a message is confirmed (or rejected) on the members that receive it, answering
 *   each member's state; a timeout names where it waits, with the message's trace;
 * - `waitIdle(net)`: until nothing moves: no transaction waiting to be mined, every member at the chain's head, no
 *   pending message anywhere, every member caught up on every topic (a delivery held or lost shows here);
 * - `confirmedOnTopic(net, member, topic)`: a member's confirmed messages on a topic, in its confirmation order.
 *
 * `net` is `startNetwork()`'s handle, a NetworkControls, or a network folder. Suites in other languages get the same
 * from `npm run network -- wait <id> | wait idle | confirmed <member> <topic>` (see network/cli.ts).
 */
import type { MemberDescription, NetworkDescription } from './description.js'
import { ControlError, NetworkControls, describeControls, NO_CONTROLS, type MemberControls } from './controls.js'
import { memberGet, memberRequest, nsPath, settledEvents, type ApiMessage } from './inspect.js'
import { formatTrace, namespaceOf, type NetworkTrace } from './trace.js'
import { collect, compare, type Difference } from './verify.js'
import { rpcCall } from './probe.js'
import { sleep } from './process.js'
import { networkCommand } from './command-line.js'
import { adminHeaders } from './admin-auth.js'
import { layout } from './layout.js'

export type NetworkRef = string | NetworkControls | { dir: string; controls?: NetworkControls; description?: NetworkDescription }

function controlsOf(net: NetworkRef): NetworkControls {
  if (net instanceof NetworkControls) return net
  if (typeof net === 'string') return new NetworkControls(net)
  return net.controls ?? new NetworkControls(net.dir, net.description ? { description: net.description } : {})
}

export interface MemberMessageState {
  org: string
  /** `confirmed`, `rejected`, or the state it waits in; `unknown` while the member does not hold it. */
  state: string
  confirmed?: string
  rejectReason?: string
}

export interface WaitOptions {
  /** Members to wait for (org names); default: the members that receive the message (all for a broadcast, the group's for a private one). */
  members?: string[]
  /** Default 60 s. */
  timeoutMs?: number
  /** Found when not given (see trace.ts namespaceOf). */
  namespace?: string
  intervalMs?: number
}

/** A wait that ran out of time: the message says where it stands, `trace` is the message's trace then. */
export class WaitTimeoutError extends Error {
  constructor(
    message: string,
    readonly trace?: NetworkTrace,
    readonly states?: Record<string, MemberMessageState>,
  ) {
    super(message)
  }
}

const SETTLED = new Set(['confirmed', 'rejected'])

/**
 * Waits until the message is confirmed or rejected on `members` (by default every member that receives it) and
 * answers the state on each. Rejects on timeout with a WaitTimeoutError naming each member's state and carrying the
 * message's trace (what it waits for, and on which message it is blocked).
 */
export async function waitConfirmed(net: NetworkRef, messageId: string, opts: WaitOptions = {}): Promise<Record<string, MemberMessageState>> {
  const c = controlsOf(net)
  const d = c.description
  const timeoutMs = opts.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  const interval = opts.intervalMs ?? 150
  let namespace = opts.namespace
  let members = opts.members?.map((name) => c.member(name))
  let states: Record<string, MemberMessageState> = {}
  let searched = 0
  for (;;) {
    // The namespace search reads the chain and the members' batches: not more than once a second.
    if (namespace === undefined && Date.now() - searched > 1000) {
      searched = Date.now()
      namespace = await namespaceOf(d, messageId, c.unavailableMembers()).catch(() => undefined)
    }
    if (namespace !== undefined) {
      // The members waited for (all, until the message says who receives it); a paused or stopped one is not asked.
      const unavailable = c.unavailableMembers()
      const asked = (members ?? d.members).filter((m) => unavailable[m.org] === undefined)
      const answers = await Promise.all(asked.map(async (m) => [m, await messageOn(m, namespace!, messageId)] as const))
      states = Object.fromEntries([
        ...(members ?? d.members).filter((m) => unavailable[m.org] !== undefined).map((m) => [m.org, { org: m.org, state: unavailable[m.org]! }]),
        ...answers.map(([m, msg]) => [m.org, stateOf(m, msg)]),
      ])
      if (members === undefined) members = await receivers(d, namespace, answers)
      if (members !== undefined && members.every((m) => SETTLED.has(states[m.org]!.state))) {
        return Object.fromEntries(members.map((m) => [m.org, states[m.org]!]))
      }
    }
    if (Date.now() > deadline) break
    await sleep(interval)
  }
  const waitingFor = (members ?? d.members).filter((m) => !SETTLED.has(states[m.org]?.state ?? 'unknown'))
  let trace: NetworkTrace | undefined
  let traceText = ''
  if (namespace !== undefined) {
    trace = await c.trace(messageId, { namespace }).catch(() => undefined)
    if (trace) traceText = `\n${formatTrace(trace)}`
  }
  const where = waitingFor.map((m) => `${m.org}: ${states[m.org]?.state ?? 'unknown'}`).join(', ')
  throw new WaitTimeoutError(
    `timed out after ${timeoutMs} ms waiting for message ${messageId} to be confirmed on ${(members ?? d.members).map((m) => m.org).join(', ')}` +
      `${namespace === undefined ? ' (no member holds it)' : ''}; still waiting on ${where || '(none)'}${traceText}`,
    trace,
    states,
  )
}

async function messageOn(m: MemberDescription, ns: string, id: string): Promise<ApiMessage | undefined | Error> {
  try {
    const r = await memberRequest<ApiMessage>(m, 'GET', `${nsPath(ns)}/messages/${encodeURIComponent(id)}`, undefined, 5000)
    return r.status === 200 ? r.body : undefined
  } catch (err) {
    return err as Error
  }
}

function stateOf(m: MemberDescription, msg: ApiMessage | undefined | Error): MemberMessageState {
  if (msg instanceof Error) return { org: m.org, state: `no answer (${msg.message})` }
  if (msg === undefined) return { org: m.org, state: 'unknown' }
  return { org: m.org, state: msg.state, ...(msg.confirmed ? { confirmed: msg.confirmed } : {}), ...(msg.rejectReason ? { rejectReason: msg.rejectReason } : {}) }
}

/** Who receives the message: everyone for a broadcast; the group's members for a private message (once some member holds it). */
async function receivers(d: NetworkDescription, ns: string, answers: readonly (readonly [MemberDescription, ApiMessage | undefined | Error])[]): Promise<MemberDescription[] | undefined> {
  const held = answers.find(([, msg]) => msg !== undefined && !(msg instanceof Error)) as [MemberDescription, ApiMessage] | undefined
  if (!held) return undefined
  const [holder, msg] = held
  if (msg.header.type === 'broadcast' || msg.header.type === 'definition' || !msg.header.group) return [...d.members]
  const g = await memberGet<{ members: { identity: string }[] }>(holder, `${nsPath(ns)}/groups/${msg.header.group}`).catch(() => undefined)
  if (!g) return undefined
  const dids = new Set(g.members.map((x) => x.identity))
  return d.members.filter((m) => dids.has(m.did))
}

export interface IdleOptions {
  /** Default 60 s. */
  timeoutMs?: number
  intervalMs?: number
  /** Namespaces to look at besides those found from the chain (see verify). */
  namespaces?: string[]
}

/** Differences that waiting cannot mend: the network disagrees with itself. */
const PERMANENT = new Set(['order', 'duplicate', 'hash', 'outcome', 'outsider'])

/**
 * Waits until the network is idle: no transaction waiting to be mined, every member has read the chain to its head,
 * no member holds a pending message, and every member has settled everything pinned on each of its topics (so no
 * private delivery is outstanding). Rejects at once when members disagree (the verify report says how), and on
 * timeout with what was still moving.
 */
export async function waitIdle(net: NetworkRef, opts: IdleOptions = {}): Promise<void> {
  const c = controlsOf(net)
  const d = c.description
  const timeoutMs = opts.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  let reasons: string[] = []
  let firstPending: { id: string; namespace: string } | undefined
  for (;;) {
    ;({ reasons, firstPending } = await idleRound(d, opts.namespaces ?? []))
    if (reasons.length === 0) return
    if (Date.now() > deadline) break
    await sleep(opts.intervalMs ?? 250)
  }
  let detail = ''
  if (firstPending) {
    const t = await c.trace(firstPending.id, { namespace: firstPending.namespace }).catch(() => undefined)
    if (t) detail = `\n${formatTrace(t)}`
  }
  const held = await heldControls(c)
  throw new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for the network to be idle:\n  ${reasons.join('\n  ')}${held}${detail}`)
}

async function idleRound(d: NetworkDescription, namespaces: string[]): Promise<{ reasons: string[]; firstPending?: { id: string; namespace: string } }> {
  const reasons: string[] = []
  const pendingTx = Number(await rpcCall<string>(d.chain.rpc, 'eth_getBlockTransactionCountByNumber', ['pending']).catch(() => '0x0'))
  if (pendingTx > 0) {
    const automine = await rpcCall<boolean>(d.chain.rpc, 'hardhat_getAutomine', []).catch(() => undefined)
    reasons.push(`${pendingTx} transaction${pendingTx === 1 ? '' : 's'} wait to be mined${automine === false ? ` (mining is off: ${networkCommand('mine')}, or mining on)` : ''}`)
  }
  const head = Number(await rpcCall<string>(d.chain.rpc, 'eth_blockNumber', []))
  const statuses = await Promise.all(
    d.members.map(async (m) => {
      try {
        const s = await memberGet<{ chain?: { lastProcessedBlock?: number } }>(m, '/api/v1/status', 3000)
        const at = s.chain?.lastProcessedBlock ?? -1
        return at >= head ? undefined : `${m.org} has read the chain to block ${at} of ${head}`
      } catch (err) {
        return (err as Error).message
      }
    }),
  )
  reasons.push(...statuses.filter((x): x is string => x !== undefined))
  if (reasons.length > 0) return { reasons }

  const { input } = await collect(d, { namespaces })
  const report = compare(input)
  const permanent = report.differences.filter((x) => PERMANENT.has(x.kind))
  if (permanent.length > 0) {
    throw new ControlError(`the members disagree; waiting cannot mend it:\n  ${permanent.map((x: Difference) => x.detail).join('\n  ')}`)
  }
  let firstPending: { id: string; namespace: string } | undefined
  for (const m of input.members) {
    const pending = [...m.messages.values()].filter((x) => !SETTLED.has(x.state))
    if (pending.length > 0) {
      firstPending ??= { id: pending[0]!.id, namespace: pending[0]!.namespace }
      reasons.push(`${m.org} holds ${pending.length} pending message${pending.length === 1 ? '' : 's'} (first: ${pending[0]!.id}, ${pending[0]!.state})`)
    }
  }
  for (const x of report.differences) {
    reasons.push(x.detail)
    if (x.kind === 'behind' && x.message && x.topic) firstPending ??= { id: x.message, namespace: x.topic.namespace }
  }
  return { reasons, ...(firstPending ? { firstPending } : {}) }
}

/** The controls in force on each member, for a timeout's explanation ('' when none or when they cannot be read). */
async function heldControls(c: NetworkControls): Promise<string> {
  const lines: string[] = []
  for (const m of c.description.members) {
    const r = await memberRequest<MemberControls>(m, 'GET', '/admin/v1/controls', undefined, 2000, adminHeaders(layout(c.dir), m.org)).catch(() => undefined)
    if (r?.status !== 200) continue
    const b = r.body
    if (describeControls(b) !== NO_CONTROLS) lines.push(`${m.org}: ${describeControls(b)}`)
  }
  return lines.length > 0 ? `\ncontrols in force:\n  ${lines.join('\n  ')}` : ''
}

/**
 * The member's confirmed messages on `topic` (any of a message's topics), in the order the member confirmed them
 * (its event sequence); rejected messages are left out.
 */
export async function confirmedOnTopic(net: NetworkRef, member: string, topic: string, namespace = 'default'): Promise<ApiMessage[]> {
  const c = controlsOf(net)
  const m = c.member(member)
  const events = await settledEvents(m, namespace).catch((err: Error) => {
    throw new ControlError(err.message)
  })
  const out: ApiMessage[] = []
  for (const e of events) {
    if (e.type !== 'message_confirmed') continue
    const msg = e.message ?? (await memberGet<ApiMessage>(m, `${nsPath(namespace)}/messages/${e.reference}`).catch((err: Error) => {
      throw new ControlError(err.message)
    }))
    if (msg.header.topics.includes(topic)) out.push(msg)
  }
  return out
}
