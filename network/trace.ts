/**
 * A message's trace across the network: each member's `GET .../messages/{id}/trace` (its timeline on that member
 * and, while it is not settled there, what it waits for), merged into one timeline ordered by time.
 */
import type { MemberDescription, NetworkDescription } from './description.js'
import { chainPins, discoverNamespaces, errorText, memberRequest, nsPath } from './inspect.js'

/** One step of a message on one member, as the node's trace route answers it. */
export interface TraceStep {
  at: string
  step: string
  detail?: string
  [field: string]: unknown
}

/** The message a waiting one is behind, as the member knows it (`message` absent while it does not hold it). */
export interface TraceBlocker {
  message?: string
  author: string
  nonce?: number
  topic: string
  batch?: string
  /**
   * Set by the network trace when the member does not hold the blocker but another member holds its batch: the
   * member that named `message` (by topic and nonce in that batch's messages).
   */
  namedBy?: string
}

export interface TraceWaiting {
  reason: string
  detail: string
  blockedBy?: TraceBlocker
  [field: string]: unknown
}

/** The node's answer: `GET /api/v1/namespaces/{ns}/messages/{id}/trace`. */
export interface MemberTrace {
  message: string
  org: string
  node: string
  state: string
  timeline: TraceStep[]
  waiting?: TraceWaiting
}

export interface NetworkTrace {
  message: string
  namespace: string
  /** Every member: its trace, or why there is none (`unknown`: 404, the member does not hold the message). */
  members: { org: string; node: string; status: 'ok' | 'unknown' | 'unreachable'; trace?: MemberTrace; error?: string }[]
  /** Every member's steps, each naming its member, oldest first. */
  timeline: (TraceStep & { org: string; node: string })[]
}

/** Reads the message's trace from every member at once and merges them. */
export async function traceMessage(d: NetworkDescription, id: string, opts: { namespace?: string; unavailable?: Record<string, string> } = {}): Promise<NetworkTrace> {
  const unavailable = opts.unavailable ?? {}
  const namespace = opts.namespace ?? (await namespaceOf(d, id, unavailable))
  const members: NetworkTrace['members'] = await Promise.all(
    d.members.map((m): Promise<NetworkTrace['members'][number]> | NetworkTrace['members'][number] => (unavailable[m.org] !== undefined ? { org: m.org, node: m.node, status: 'unreachable' as const, error: unavailable[m.org]! } : memberTrace(m, namespace, id))),
  )
  if (members.every((m) => m.status !== 'ok')) {
    const unknown = members.every((m) => m.status === 'unknown')
    throw new Error(
      unknown
        ? `no member knows message ${id} in namespace ${namespace}`
        : `no member answered the trace of ${id}: ${members.map((m) => `${m.org}: ${m.error ?? m.status}`).join('; ')}`,
    )
  }
  await nameBlockers(d, namespace, members, unavailable)
  return { message: id, namespace, members, timeline: mergeTimelines(members.flatMap((m) => (m.trace ? [m.trace] : []))) }
}

/**
 * A member blocked behind a message it does not hold (a private batch not delivered to it, a broadcast not
 * downloaded yet) knows the blocker's author, topic, nonce and, once its pin was read, its batch; another member that
 * holds that batch (its sender, at least) names the message: the one of the batch on that topic, with that nonce for a
 * private message, the first on the topic for a broadcast.
 */
async function nameBlockers(d: NetworkDescription, ns: string, members: NetworkTrace['members'], unavailable: Record<string, string>): Promise<void> {
  for (const m of members) {
    const b = m.trace?.waiting?.blockedBy
    if (!b || b.message !== undefined || b.batch === undefined) continue
    for (const holder of d.members) {
      if (holder.org === m.org || unavailable[holder.org] !== undefined) continue
      const named = await blockerIn(holder, ns, b).catch(() => undefined)
      if (named) {
        b.message = named
        b.namedBy = holder.org
        break
      }
    }
  }
}

async function blockerIn(holder: MemberDescription, ns: string, b: TraceBlocker): Promise<string | undefined> {
  const batch = await memberRequest<{ namespace: string; manifest: { messages: { id: string }[] } }>(holder, 'GET', `/api/v1/batches/${b.batch}`)
  if (batch.status !== 200) return undefined
  for (const entry of batch.body.manifest.messages) {
    const r = await memberRequest<{ header: { topics: string[]; author: string }; pins?: string[] }>(holder, 'GET', `${nsPath(batch.body.namespace ?? ns)}/messages/${entry.id}`)
    if (r.status !== 200 || r.body.header.author !== b.author) continue
    const i = r.body.header.topics.indexOf(b.topic)
    if (i < 0) continue
    if (b.nonce === undefined) return entry.id
    const pin = r.body.pins?.[i]
    if (pin !== undefined && Number(pin.split(':')[1]) === Number(b.nonce)) return entry.id
  }
  return undefined
}

async function memberTrace(m: MemberDescription, ns: string, id: string): Promise<NetworkTrace['members'][number]> {
  const base = { org: m.org, node: m.node }
  try {
    const r = await memberRequest<MemberTrace>(m, 'GET', `${nsPath(ns)}/messages/${encodeURIComponent(id)}/trace`)
    if (r.status === 200) return { ...base, status: 'ok', trace: r.body }
    if (r.status === 404 && /no route for/i.test(errorText(r.body))) return { ...base, status: 'unreachable', error: `${m.org} serves no trace route (${errorText(r.body)})` }
    if (r.status === 404) return { ...base, status: 'unknown', error: errorText(r.body) }
    return { ...base, status: 'unreachable', error: `answered ${r.status} ${errorText(r.body)}` }
  } catch (err) {
    return { ...base, status: 'unreachable', error: (err as Error).message }
  }
}

/**
 * The namespace a message is in: `default` when some member holds it there; otherwise the namespace of the batch
 * that lists it, among the batches pinned on the chain; otherwise each namespace found from the pins is tried.
 */
export async function namespaceOf(d: NetworkDescription, id: string, unavailable: Record<string, string> = {}): Promise<string> {
  const asked = d.members.filter((m) => unavailable[m.org] === undefined)
  const held = async (ns: string): Promise<boolean> => {
    const answers = await Promise.all(asked.map((m) => memberRequest(m, 'GET', `${nsPath(ns)}/messages/${encodeURIComponent(id)}`).catch(() => undefined)))
    return answers.some((r) => r?.status === 200)
  }
  if (await held('default')) return 'default'
  const { pins } = await chainPins(d)
  const found = await discoverNamespaces(d, pins, [], asked)
  for (const b of found.batches.values()) if (b.manifest.messages.some((x) => x.id === id)) return b.namespace
  for (const ns of found.namespaces) if (ns !== 'default' && (await held(ns))) return ns
  throw new Error(`no member holds message ${id} in default or in any namespace with a batch on the chain (${found.namespaces.join(', ')}); name its namespace`)
}

/** Orders timestamps of any precision (RFC 3339, with up to nanoseconds): whole seconds, then the fraction. */
export function timeKey(at: string): string {
  const m = /^(.*?T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$/.exec(at)
  if (!m) return at
  const ms = Date.parse(`${m[1]}${m[3] ?? 'Z'}`)
  if (Number.isNaN(ms)) return at
  return `${String(ms / 1000).padStart(12, '0')}.${(m[2] ?? '').padEnd(9, '0')}`
}

/** Every member's steps in one timeline, oldest first; steps at the same instant keep each member's own order. */
export function mergeTimelines(traces: readonly MemberTrace[]): NetworkTrace['timeline'] {
  const all = traces.flatMap((t, mi) => t.timeline.map((s, si) => ({ s: { ...s, org: t.org, node: t.node }, key: timeKey(s.at), mi, si })))
  all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.mi - b.mi || a.si - b.si))
  return all.map((x) => x.s)
}

const FIELD_ORDER = ['batch', 'cid', 'peer', 'tx', 'block', 'logIndex', 'blob', 'datatype', 'reason']

/** The merged trace in words: where the message stands on each member, then the timeline. */
export function formatTrace(t: NetworkTrace): string {
  const lines = [`message ${t.message} (namespace ${t.namespace})`]
  const width = Math.max(...t.members.map((m) => `${m.org}/${m.node}`.length))
  for (const m of t.members) {
    const who = `${m.org}/${m.node}`.padEnd(width)
    if (m.status === 'unknown') lines.push(`  ${who}  not known here`)
    else if (m.status === 'unreachable') lines.push(`  ${who}  no answer: ${m.error}`)
    else lines.push(`  ${who}  ${m.trace!.state}${m.trace!.waiting ? `: ${waitingText(m.trace!.waiting)}` : ''}`)
  }
  if (t.timeline.length === 0) return lines.join('\n')
  const dates = new Set(t.timeline.map((s) => s.at.slice(0, 10)))
  const when = (at: string): string => {
    const t = at.replace(/(\.\d{1,2})Z$/, (_, f: string) => `${f.padEnd(4, '0')}Z`).replace(/:(\d\d)Z$/, ':$1.000Z')
    return dates.size === 1 ? t.slice(11).replace(/Z$/, '') : t
  }
  lines.push('', dates.size === 1 ? `timeline (UTC, ${[...dates][0]}):` : 'timeline:')
  const whenWidth = Math.max(...t.timeline.map((s) => when(s.at).length))
  const orgWidth = Math.max(...t.timeline.map((s) => s.org.length))
  const stepWidth = Math.max(...t.timeline.map((s) => s.step.length))
  for (const s of t.timeline) {
    lines.push(`  ${when(s.at).padEnd(whenWidth)}  ${s.org.padEnd(orgWidth)}  ${s.step.padEnd(stepWidth)}  ${stepText(s)}`.trimEnd())
  }
  return lines.join('\n')
}

function stepText(s: TraceStep): string {
  const detail = typeof s.detail === 'string' ? s.detail : ''
  const fields = Object.keys(s)
    // The batch's FireFly transaction id says little here (the JSON form has it).
    .filter((k) => !['at', 'step', 'detail', 'org', 'node', 'tx'].includes(k) && s[k] !== undefined && s[k] !== null && s[k] !== '')
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
    .filter((k) => !detail.includes(String(s[k])))
    .map((k) => `${k} ${typeof s[k] === 'object' ? JSON.stringify(s[k]) : String(s[k])}`)
  return [detail, fields.length > 0 ? `(${fields.join(', ')})` : ''].filter(Boolean).join(' ')
}

const rank = (k: string): number => {
  const i = FIELD_ORDER.indexOf(k)
  return i < 0 ? FIELD_ORDER.length : i
}

/** Why a message waits, in one line. */
export function waitingText(w: TraceWaiting): string {
  const b = w.blockedBy
  const detail = w.detail || (b ? `blocked behind the message of ${b.author} on topic ${b.topic}` : '')
  const named = b?.message !== undefined && !detail.includes(b.message) ? ` [the blocker is message ${b.message}${b.namedBy ? `, named by ${b.namedBy}, which holds its batch` : ''}]` : ''
  return `waiting (${w.reason}): ${detail}${named}`
}
