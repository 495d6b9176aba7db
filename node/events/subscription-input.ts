import { ParleyError } from '../core/errors.js'
import { isUuid } from '../core/ids.js'
import { NAME_RE } from '../core/names.js'
import {
  EVENT_FILTER_FIELDS,
  SUBSCRIPTION_TRANSPORTS,
  type EventFilterField,
  type SubscriptionFilter,
  type SubscriptionOptions,
  type SubscriptionTransport,
} from '../model/index.js'
import { compileExpression } from './filter.js'

/**
 * Readers of what a client sends to define a subscription: the REST body (FireFly's Subscription; docs/api.md), the
 * WebSocket `start` frame's filter and options, and the `filter.*` query parameters of a WebSocket URL. Every filter
 * key, alias and precedence comes from EVENT_FILTER_FIELDS; every mistake is a ParleyError INVALID_FIELD naming the
 * key, and every expression is compiled here, so a stored or started filter always compiles.
 */

/** How a filter key was spelled, and how strongly that spelling holds when several name the same field. */
interface Spelling {
  field: EventFilterField
  /** 0: the field's name; 1: a current alias; 2: a deprecated alias, which loses to the others. */
  rank: number
}

/** Every dotted spelling of every field. */
const SPELLINGS: ReadonlyMap<string, Spelling> = new Map(
  EVENT_FILTER_FIELDS.flatMap((field): [string, Spelling][] => [[field.name, { field, rank: 0 }], ...field.aliases.map((a): [string, Spelling] => [a.name, { field, rank: a.deprecated ? 2 : 1 }])]),
)

/** In an object: the keys that hold an expression, and those that hold an object of them (`message`, `blockchain`). */
const LEAVES = new Set([...SPELLINGS.keys()].filter((s) => !s.includes('.')))
const CONTAINERS: ReadonlyMap<string, readonly string[]> = (() => {
  const m = new Map<string, string[]>()
  for (const s of SPELLINGS.keys()) {
    const dot = s.indexOf('.')
    if (dot < 0) continue
    const list = m.get(s.slice(0, dot)) ?? []
    list.push(s.slice(dot + 1))
    m.set(s.slice(0, dot), list)
  }
  return m
})()

const KNOWN_KEYS = (() => {
  const current = [...SPELLINGS].filter(([, s]) => s.rank < 2).map(([name]) => name)
  const deprecated = [...SPELLINGS].filter(([, s]) => s.rank === 2).map(([name]) => name)
  return `${current.join(', ')}; deprecated: ${deprecated.join(', ')}`
})()

/** An expression as given, before the spellings of one field are settled. */
interface Given extends Spelling {
  /** As the caller wrote it, dotted, for errors: `message.tag`, `tag`. */
  key: string
  value: string
}

/**
 * A subscription filter from a request body, in the nested form (`{events, topic, message: {author, group,
 * tag, topics}, transaction: {type}, blockchainevent: {name, listener}}`), FireFly's deprecated flat keys (`author`,
 * `group`, `tag`, `topics`) or its `blockchain: {name, listener}` spelling, normalised to the nested form. An
 * empty expression counts as none (FireFly's rule), so a deprecated key still holds when the current one is empty.
 * Absent or null: no filter.
 */
export function parseSubscriptionFilter(value: unknown): SubscriptionFilter {
  if (value === undefined || value === null) return {}
  if (!isObject(value)) throw new ParleyError('INVALID_FIELD', `filter must be an object of regular expressions; known keys: ${KNOWN_KEYS}`)
  const given: Given[] = []
  for (const [key, v] of Object.entries(value)) {
    if (LEAVES.has(key)) {
      const s = expressionAt(v, key)
      if (s !== undefined) given.push({ ...SPELLINGS.get(key)!, key, value: s })
      continue
    }
    const children = CONTAINERS.get(key)
    if (children === undefined) throw unknownKey(key)
    if (v === undefined || v === null) continue
    if (!isObject(v)) throw new ParleyError('INVALID_FIELD', `filter.${key} must be an object with ${children.join(', ')}`)
    for (const [sub, sv] of Object.entries(v)) {
      const dotted = `${key}.${sub}`
      const spelling = SPELLINGS.get(dotted)
      if (!spelling) throw unknownKey(dotted)
      const s = expressionAt(sv, dotted)
      if (s !== undefined) given.push({ ...spelling, key: dotted, value: s })
    }
  }
  return settle(given)
}

/**
 * A filter from a WebSocket URL's query parameters, `filter.<name or alias>` as FireFly's clients send them
 * (`filter.events`, `filter.message.author`, `filter.blockchain.name`, deprecated `filter.tag`...). Parameters not
 * starting with `filter.` are not this function's business and are skipped; an unknown `filter.` key, or one given
 * twice, is the caller's mistake.
 */
export function filterFromQuery(entries: Iterable<[string, string]>): SubscriptionFilter {
  const given: Given[] = []
  const seen = new Set<string>()
  for (const [param, value] of entries) {
    if (!param.startsWith('filter.')) continue
    const key = param.slice('filter.'.length)
    const spelling = SPELLINGS.get(key)
    if (!spelling) throw unknownKey(key)
    if (seen.has(key)) throw new ParleyError('INVALID_FIELD', `${param} given more than once`)
    seen.add(key)
    given.push({ ...spelling, key, value })
  }
  return settle(given)
}

/**
 * The nested filter: for each field, the strongest non-empty spelling given. Every expression given must compile,
 * even one another spelling overrides, as FireFly compiles each before choosing.
 */
function settle(given: readonly Given[]): SubscriptionFilter {
  const present = given.filter((g) => g.value !== '')
  for (const g of present) compileExpression(`filter.${g.key}`, g.value)
  const out: SubscriptionFilter = {}
  for (const field of EVENT_FILTER_FIELDS) {
    const best = present.filter((g) => g.field === field).sort((a, b) => a.rank - b.rank)[0]
    if (best) setExpression(out, field, best.value)
  }
  return out
}

function setExpression(filter: SubscriptionFilter, field: EventFilterField, value: string): void {
  const [top, sub] = field.path
  // The paths come from the one table that describes SubscriptionFilter; the casts only say so to the compiler.
  const record = filter as Record<string, string | Record<string, string>>
  if (sub === undefined) record[top] = value
  else ((record[top] ??= {}) as Record<string, string>)[sub] = value
}

function expressionAt(v: unknown, key: string): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new ParleyError('INVALID_FIELD', `filter.${key} must be a string (a regular expression), not ${describe(v)}`)
  return v
}

function unknownKey(key: string): ParleyError {
  return new ParleyError('INVALID_FIELD', `unknown subscription filter key filter.${key}; known keys: ${KNOWN_KEYS}`)
}

/** Batch mode's defaults when `readAhead` or `batchTimeout` is not given (FireFly's `subscription.defaults`). */
export const DEFAULT_BATCH_READ_AHEAD = 50
export const DEFAULT_BATCH_TIMEOUT = '50ms'
/** FireFly reads `readahead` as a 16-bit unsigned integer. */
export const MAX_READ_AHEAD = 65_535
/** Longer than Node's timers can wait (2^31 - 1 ms, about 24.8 days): a longer timeout would fire at once. */
export const MAX_BATCH_TIMEOUT_MS = 2_147_483_647

/**
 * Subscription options from a request body or a `start` frame: `firstEvent` (`oldest`, `newest` or a sequence >= -1,
 * given as a number or as decimal text; kept as its text), `readAhead` (0-65535), `batch` (with FireFly's defaults
 * of readAhead 50 and batchTimeout 50ms filled in when it is on) and `batchTimeout` (a Go duration, `50ms`, `1.5s`,
 * `2m`, or a number of milliseconds, kept as a duration text). `withData: true` is refused, as FireFly's websockets
 * transport refuses it (FF10244). Other keys are ignored, as FireFly ignores options meant for other transports.
 * Absent or null: no options.
 */
export function parseSubscriptionOptions(value: unknown): SubscriptionOptions {
  if (value === undefined || value === null) return {}
  if (!isObject(value)) throw new ParleyError('INVALID_FIELD', `options must be an object ({firstEvent, readAhead, batch, batchTimeout}), not ${describe(value)}`)
  const opt = (key: string): unknown => (Object.hasOwn(value, key) ? value[key] : undefined)
  const out: SubscriptionOptions = {}

  const firstEvent = parseFirstEvent(opt('firstEvent'))
  if (firstEvent !== undefined) out.firstEvent = firstEvent

  const readAhead = opt('readAhead')
  if (readAhead !== undefined && readAhead !== null) {
    if (typeof readAhead !== 'number' || !Number.isInteger(readAhead) || readAhead < 0 || readAhead > MAX_READ_AHEAD) {
      throw new ParleyError('INVALID_FIELD', `options.readAhead must be a whole number from 0 to ${MAX_READ_AHEAD}, not ${describe(readAhead)}`)
    }
    out.readAhead = readAhead
  }

  const batch = opt('batch')
  if (batch !== undefined && batch !== null) {
    if (typeof batch !== 'boolean') throw new ParleyError('INVALID_FIELD', `options.batch must be true or false, not ${describe(batch)}`)
    out.batch = batch
  }

  const batchTimeout = parseBatchTimeout(opt('batchTimeout'))
  if (batchTimeout !== undefined) out.batchTimeout = batchTimeout

  const withData = opt('withData')
  if (withData !== undefined && withData !== null) {
    if (typeof withData !== 'boolean') throw new ParleyError('INVALID_FIELD', `options.withData must be true or false, not ${describe(withData)}`)
    if (withData) {
      throw new ParleyError(
        'INVALID_FIELD',
        'withData is not supported by the websockets transport: events carry the message and references to its data, not the data values (FireFly FF10244; withData must be false)',
      )
    }
  }

  if (out.batch) {
    // FireFly fills these in for batch mode when they are missing or zero, and stores them so.
    if (!out.readAhead) out.readAhead = DEFAULT_BATCH_READ_AHEAD
    out.batchTimeout ??= DEFAULT_BATCH_TIMEOUT
  }
  return out
}

/** `oldest`, `newest`, or a sequence number >= -1 as its decimal text; empty text is `newest` left implicit. */
function parseFirstEvent(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined
  if (v === 'oldest' || v === 'newest') return v
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^[+-]?\d+$/.test(v) ? Number(v) : NaN
  if (!Number.isSafeInteger(n)) {
    throw new ParleyError('INVALID_FIELD', `options.firstEvent must be 'newest', 'oldest' or a sequence number, not ${describe(v)} (FireFly FF10191)`)
  }
  if (n < -1) throw new ParleyError('INVALID_FIELD', `options.firstEvent must be greater than or equal to -1, not ${n} (FireFly FF10192)`)
  return String(n)
}

/**
 * The duration text kept for `batchTimeout`, checked by reading it back with parseDurationMs, the reader delivery
 * uses when the subscription starts: whatever is accepted here starts there.
 */
function parseBatchTimeout(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined
  const outOfRange = (): ParleyError => new ParleyError('INVALID_FIELD', `options.batchTimeout must be from 0 to ${MAX_BATCH_TIMEOUT_MS} ms, not ${typeof v === 'number' ? String(v) : describe(v)}`)
  let text: string
  if (typeof v === 'number') {
    // Checked before it is written out: a number too large for whole nanoseconds has no duration text.
    if (!Number.isFinite(v) || v < 0 || v > MAX_BATCH_TIMEOUT_MS) throw outOfRange()
    text = millisecondsText(v)
  } else if (typeof v === 'string') {
    text = v
  } else {
    throw new ParleyError('INVALID_FIELD', `options.batchTimeout must be a duration ('50ms', '1.5s', '2m') or a number of milliseconds, not ${describe(v)}`)
  }
  const ms = parseDurationMs(text, 'options.batchTimeout')
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_BATCH_TIMEOUT_MS) throw outOfRange()
  return text
}

/**
 * A number of milliseconds as a Go duration, rounded to whole nanoseconds (a Go duration's resolution) and written
 * in fixed point: `75ms`, `2.5ms`, `0.000001ms`. `${n}ms` would write 1e-7 as `1e-7ms`, which no duration reader
 * (FireFly's, Go's or parseDurationMs) takes. `n` is finite and from 0 to MAX_BATCH_TIMEOUT_MS, so the nanoseconds
 * are a safe integer.
 */
function millisecondsText(n: number): string {
  const ns = Math.round(n * 1e6)
  const whole = Math.floor(ns / 1e6)
  const fraction = String(ns % 1e6).padStart(6, '0').replace(/0+$/, '')
  return fraction === '' ? `${whole}ms` : `${whole}.${fraction}ms`
}

const UNIT_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
/** One `<number><unit>` of a Go duration; `ms` before `m` and `s`, so the longest unit is taken. */
const DURATION_PART = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/y

/**
 * A duration as FireFly reads one (`fftypes.ParseDurationString` with milliseconds as the default unit): Go's
 * `time.ParseDuration` form (`50ms`, `1.5s`, `2m`, `1h30m`; units ns, us, µs, ms, s, m, h; `0` alone), or a bare
 * whole number of milliseconds. Negative durations are refused. Answers milliseconds, possibly fractional.
 */
export function parseDurationMs(text: string, what = 'duration'): number {
  const bad = (): ParleyError => new ParleyError('INVALID_FIELD', `${what} must be a duration like '50ms', '1.5s' or '2m', or a whole number of milliseconds: ${JSON.stringify(text.slice(0, 100))}`)
  if (/^\d+$/.test(text)) return Number(text)
  const body = text.startsWith('+') ? text.slice(1) : text
  if (body === '') throw bad()
  let total = 0
  let at = 0
  while (at < body.length) {
    DURATION_PART.lastIndex = at
    const m = DURATION_PART.exec(body)
    if (!m || (m[1] === '' && (m[2] ?? '') === '')) throw bad()
    total += Number(`${m[1] || '0'}.${m[2] || '0'}`) * UNIT_MS[m[3]!]!
    at = DURATION_PART.lastIndex
  }
  return total
}

/** What a client sends to create or replace a durable subscription, read and checked. */
export interface SubscriptionRequest {
  name: string
  transport: SubscriptionTransport
  filter: SubscriptionFilter
  options: SubscriptionOptions
}

/**
 * Fields of FireFly's Subscription that the node sets. A client that sends back a subscription it read (the SDK's
 * replaceSubscription) sends them too; they are ignored, as FireFly ignores them on input.
 */
const NODE_SET_FIELDS = new Set(['id', 'namespace', 'created', 'updated', 'ephemeral', 'status'])
const REQUEST_FIELDS = ['name', 'transport', 'filter', 'options']

/**
 * A subscription definition (docs/api.md, Subscriptions): `name` (required; the name rule, and not a UUID, so that a name never
 * reads as an id), `transport` (`websockets`, the default), `filter` and `options`. Any other field is refused.
 */
export function parseSubscriptionRequest(body: unknown): SubscriptionRequest {
  if (!isObject(body)) throw new ParleyError('INVALID_FIELD', `the request body must be a JSON object {${REQUEST_FIELDS.join(', ')}}`)
  for (const key of Object.keys(body)) {
    if (!REQUEST_FIELDS.includes(key) && !NODE_SET_FIELDS.has(key)) {
      throw new ParleyError('INVALID_FIELD', `unknown subscription field ${JSON.stringify(key.slice(0, 100))}; a subscription has ${REQUEST_FIELDS.join(', ')}`)
    }
  }
  const field = (key: string): unknown => (Object.hasOwn(body, key) ? body[key] : undefined)
  return {
    name: parseSubscriptionName(field('name')),
    transport: parseTransport(field('transport')),
    filter: parseSubscriptionFilter(field('filter')),
    options: parseSubscriptionOptions(field('options')),
  }
}

/** FireFly's rule for a subscription name (`ValidateFFNameFieldNoUUID`): the name rule, and no UUID in any form. */
export function parseSubscriptionName(v: unknown): string {
  if (v === undefined || v === null || v === '') throw new ParleyError('INVALID_FIELD', 'name is required')
  if (typeof v !== 'string') throw new ParleyError('INVALID_FIELD', `name must be a string, not ${describe(v)}`)
  if (!NAME_RE.test(v)) throw new ParleyError('INVALID_FIELD', `name must be 1-64 letters, digits, '.', '_' or '-' and start and end alphanumeric: ${JSON.stringify(v.slice(0, 100))}`)
  if (isUuid(v) || /^[0-9a-f]{32}$/i.test(v)) throw new ParleyError('INVALID_FIELD', `name must not be a UUID (subscriptions are found by id or by name): ${v}`)
  return v
}

function parseTransport(v: unknown): SubscriptionTransport {
  if (v === undefined || v === null || v === '') return 'websockets'
  const known: readonly string[] = SUBSCRIPTION_TRANSPORTS
  if (typeof v !== 'string' || !known.includes(v)) {
    throw new ParleyError('INVALID_FIELD', `transport must be one of ${SUBSCRIPTION_TRANSPORTS.join(', ')} (the only transport this node serves), not ${describe(v)}`)
  }
  return v as SubscriptionTransport
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** A value named in an error: its JSON, cut short. */
function describe(v: unknown): string {
  if (v === undefined) return 'nothing'
  const text = JSON.stringify(v) ?? String(v)
  return text.length > 100 ? `${text.slice(0, 100)}…` : text
}
