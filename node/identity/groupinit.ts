import { groupHash, sortGroupMembers } from '../core/hashes.js'
import { isUuid, type Hash, type IdentityId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import type { Group, GroupMember } from '../model/index.js'

/**
 * Reads the group a groupinit carries (group-resolver `groupinitValue`, FireFly's `json.Marshal(&group)`) and checks
 * it as FireFly's `Group.Validate(existing=true)` does: members well formed, none twice, and the hash of
 * `{namespace, name, members}` equal both to the hash it states and to `expected` (the message's `header.group`).
 * Answers the group, or why it is refused.
 */
export function parseGroupinit(valueRaw: string | null | undefined, expected: Hash | undefined, namespace: string): { ok: true; group: Group } | { ok: false; reason: string } {
  const fail = (reason: string) => ({ ok: false as const, reason })
  if (!valueRaw) return fail('the groupinit carries no value')
  let v: unknown
  try {
    v = JSON.parse(valueRaw)
  } catch {
    return fail('the groupinit value is not JSON')
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail('the groupinit value is not an object')
  const o = v as Record<string, unknown>
  const name = o.name === undefined ? '' : o.name
  if (typeof name !== 'string') return fail('the group name is not a string')
  const ns = o.namespace === undefined ? '' : o.namespace
  if (typeof ns !== 'string') return fail('the group namespace is not a string')
  if (ns !== namespace) return fail(`the group is in namespace ${JSON.stringify(ns)}, its message in ${namespace}`)
  if (!Array.isArray(o.members) || o.members.length < 2) return fail('the group needs at least two members')
  const members: GroupMember[] = []
  const seen = new Set<string>()
  for (const m of o.members as unknown[]) {
    const mm = m as Record<string, unknown> | null
    if (!mm || typeof mm.identity !== 'string' || typeof mm.node !== 'string' || !isUuid(mm.node)) return fail('a group member is not {identity, node}')
    const k = `${mm.identity}\u0000${mm.node}`
    if (seen.has(k)) return fail(`member ${mm.identity} on ${mm.node} appears twice`)
    seen.add(k)
    members.push({ identity: mm.identity, node: mm.node as IdentityId })
  }
  const sorted = sortGroupMembers(members)
  const hash = groupHash({ namespace: ns, name, members: sorted })
  if (o.hash !== undefined && o.hash !== hash) return fail(`the group states hash ${String(o.hash)}, its members hash to ${hash}`)
  if (expected !== undefined && expected !== hash) return fail(`the group hashes to ${hash}, the message names group ${expected}`)
  const created = typeof o.created === 'string' ? (o.created as Timestamp) : ('1970-01-01T00:00:00Z' as Timestamp)
  return { ok: true, group: { hash, namespace: ns, name, members: sorted, created } }
}
