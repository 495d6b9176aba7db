import { ParleyError } from '../core/errors.js'
import { NAME_RE } from '../core/names.js'
import { parseUuid, type DataId } from '../core/ids.js'
import type { JsonNode } from '../core/json.js'
import { optString } from '../core/input.js'
import { parseDatatypeRef, parseValidator } from '../data/datatype.js'
import { type DatatypeRef, type TxType } from '../model/index.js'
import { DEFAULT_REQUEST_LIMITS, overLimit, type RequestLimits } from '../core/limits.js'

/** What parsing a send checks against this member's limits (config `limits`). */
export type MessageInputLimits = Pick<RequestLimits, 'dataPerMessage' | 'topicsPerMessage' | 'valueBytes' | 'idempotencyKeyChars'>

export type DataInput =
  | { kind: 'ref'; id: DataId }
  /** `valueRaw` is the compacted JSON text of the value exactly as the caller sent it. */
  | { kind: 'inline'; valueRaw: string; validator: string; datatype?: DatatypeRef }

export interface MessageInput {
  header: { tag?: string; topics?: string[]; txtype?: TxType; author?: string; key?: string; cid?: string; /** A group hash given in the header (private sends). */ group?: string }
  data: DataInput[]
  group?: { name?: string; members: { identity: string; node?: string }[] }
  idempotencyKey?: string
}

const bad = (msg: string): never => {
  throw new ParleyError('INVALID_FIELD', msg)
}

/** Reads a send/broadcast body: FireFly's `MessageInOut` shape, checked field by field with 400s that name the field. */
export function parseMessageInput(body: JsonNode, opts: { allowGroup: boolean; limits?: MessageInputLimits }): MessageInput {
  const limits = opts.limits ?? DEFAULT_REQUEST_LIMITS
  if (body.kind !== 'object') bad('the request body must be a JSON object')
  const header = body.get('header')
  const out: MessageInput = { header: {}, data: [] }
  if (header !== undefined && header.kind !== 'null') {
    if (header.kind !== 'object') bad('header must be an object')
    const tag = optString(header.get('tag'), 'header.tag')
    if (tag !== undefined && tag !== '') {
      if (!NAME_RE.test(tag)) bad(`header.tag must be 1-64 letters, digits, '.', '_' or '-', starting and ending alphanumeric: ${JSON.stringify(tag)}`)
      out.header.tag = tag
    }
    const topics = header.get('topics') ?? header.get('topic')
    if (topics !== undefined && topics.kind !== 'null') out.header.topics = parseTopics(topics, limits.topicsPerMessage)
    const txtype = optString(header.get('txtype'), 'header.txtype')
    if (txtype !== undefined && txtype !== '') {
      if (txtype === 'batch_pin') out.header.txtype = 'batch_pin'
      else if (txtype === 'none' || txtype === 'unpinned') out.header.txtype = 'none'
      else bad(`header.txtype must be batch_pin or none (unpinned): ${JSON.stringify(txtype)}`)
    }
    const author = optString(header.get('author'), 'header.author')
    if (author) out.header.author = author
    const key = optString(header.get('key'), 'header.key')
    if (key) out.header.key = key
    const cid = optString(header.get('cid'), 'header.cid')
    if (cid) out.header.cid = parseUuid(cid, 'header.cid')
    for (const field of ['type', 'group', 'namespace', 'datahash', 'id']) {
      const v = header.get(field)
      if (field === 'type' && v?.kind === 'string' && ['broadcast', 'private'].includes(String(v.value))) continue
      if (v !== undefined && v.kind !== 'null' && !(v.kind === 'string' && v.value === '')) {
        if (field !== 'group' || !opts.allowGroup) bad(`header.${field} is set by the node and cannot be given`)
        if (v.kind !== 'string') bad('header.group must be a group hash (64 hex characters)')
        out.header.group = String(v.value)
      }
    }
  }
  const data = body.get('data')
  if (data === undefined || data.kind === 'null') bad('data is required: an array of {value} or {id} items')
  if (data!.kind !== 'array') bad('data must be an array')
  // Counted before any item is built: a body of millions of tiny items costs a count, not a node each.
  const items = data!.count()
  if (items === 0) bad('data must hold at least one item')
  if (items > limits.dataPerMessage) throw overLimit('dataPerMessage', limits.dataPerMessage, `data has ${items} items`)
  out.data = data!.items.map((item, i) => parseDataInput(item, `data[${i}]`, limits.valueBytes))
  const ids = out.data.filter((d) => d.kind === 'ref').map((d) => (d as { id: string }).id)
  if (new Set(ids).size !== ids.length) bad('data refers to the same id more than once')

  const group = body.get('group')
  if (group !== undefined && group.kind !== 'null') {
    if (!opts.allowGroup) bad('a broadcast has no group; use messages/private for a private send')
    out.group = parseGroup(group)
  }
  const idem = optString(body.get('idempotencyKey'), 'idempotencyKey')
  if (idem && idem.length > limits.idempotencyKeyChars) throw overLimit('idempotencyKeyChars', limits.idempotencyKeyChars, `idempotencyKey is ${idem.length} characters long`)
  if (idem) out.idempotencyKey = idem
  return out
}

export function parseTopics(node: JsonNode, maxTopics: number): string[] {
  if (node.kind !== 'string' && node.kind !== 'array') bad('header.topics must be an array of strings')
  // Counted before any topic is built, as data items are.
  const count = node.kind === 'array' ? node.count() : 1
  if (count > maxTopics) throw overLimit('topicsPerMessage', maxTopics, `header.topics has ${count} topics`)
  const list = node.kind === 'string' ? [String(node.value)] : node.items.map((t, i) => optString(t, `header.topics[${i}]`) ?? '')
  if (list.length === 0) return []
  for (const t of list) if (!NAME_RE.test(t)) bad(`topic must be 1-64 letters, digits, '.', '_' or '-', starting and ending alphanumeric: ${JSON.stringify(t)}`)
  if (new Set(list).size !== list.length) bad('header.topics holds the same topic twice')
  return list
}

export function parseDataInput(item: JsonNode, where: string, maxValueBytes: number): DataInput {
  if (item.kind !== 'object') bad(`${where} must be an object: {value} or {id}`)
  const id = item.get('id')
  const value = item.get('value')
  if (id !== undefined && id.kind !== 'null') {
    if (value !== undefined) bad(`${where} has both id and value; give one`)
    return { kind: 'ref', id: parseUuid<DataId>(id.value, `${where}.id`) }
  }
  if (value === undefined || value.kind === 'null') bad(`${where} needs a value (or the id of uploaded data)`)
  const valueBytes = Buffer.byteLength(value!.raw)
  if (valueBytes > maxValueBytes) throw overLimit('valueBytes', maxValueBytes, `${where}.value is ${valueBytes} bytes as stored (compacted JSON, <, > and & escaped as Go writes them)`)
  const validator = parseValidator(optString(item.get('validator'), `${where}.validator`), `${where}.validator`)
  const datatype = parseDatatypeRef(item.get('datatype'), `${where}.datatype`)
  return { kind: 'inline', valueRaw: value!.raw, validator, ...(datatype ? { datatype } : {}) }
}


function parseGroup(node: JsonNode): NonNullable<MessageInput['group']> {
  if (node.kind !== 'object') bad('group must be an object {members: [{identity}]}')
  const members = node.get('members')
  if (members === undefined || members.kind !== 'array' || members.count(0) === 0) bad('group.members must hold at least one member')
  const name = optString(node.get('name'), 'group.name')
  const list: { identity: string; node?: string }[] = []
  // Each member checked as it is built, none kept: a list of millions of tiny items stops at the first bad one.
  members!.eachItem((m, i) => {
    if (m.kind !== 'object') bad(`group.members[${i}] must be {identity}`)
    const identity = optString(m.get('identity'), `group.members[${i}].identity`)
    if (!identity) bad(`group.members[${i}].identity is required`)
    const nodeName = optString(m.get('node'), `group.members[${i}].node`)
    list.push({ identity: identity!, ...(nodeName ? { node: nodeName } : {}) })
  })
  return { ...(name ? { name } : {}), members: list }
}
