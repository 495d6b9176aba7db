/**
 * `npm run network -- rogue [<org>] <attack> [options]`: the arguments read into one attack of network/rogue/member.ts.
 * Pure: nothing runs here.
 */
import { parseArgs } from 'node:util'
import { HARDHAT_ACCOUNT_COUNT } from './chain.js'
import type { DatatypeRef } from '../../node/model/index.js'
import type { RogueWho } from './member.js'

export type RogueAttack =
  | { attack: 'garbage-pin'; topic: string }
  | { attack: 'squat-pin'; batch?: string; next: boolean; topic?: string; payloadRef?: string; timeoutMs: number }
  | { attack: 'deliver-under'; victim: string; batch: string; namespace?: string }
  | { attack: 'reuse-id'; message: string; to?: string[]; namespace?: string; datatype?: DatatypeRef }
  | { attack: 'foreign-group'; org?: string; node?: string; namespace?: string }
  | { attack: 'claim-name'; name?: string }
  | { attack: 'flood-blobs'; to: string; bytes: number; count: number }
  | { attack: 'flood-batches'; to: string; bytes: number; count: number }
  | { attack: 'repin-private'; first?: string[]; namespace?: string; timeoutMs: number }

export interface RogueCommand {
  verb: 'rogue'
  who: RogueWho
  run: RogueAttack
  json: boolean
}

export const ATTACKS = ['garbage-pin', 'squat-pin', 'deliver-under', 'reuse-id', 'foreign-group', 'claim-name', 'flood-blobs', 'flood-batches', 'repin-private'] as const

/** Attacks a chain account can make alone; the others need a member's node certificate. */
const CHAIN_ONLY = new Set(['garbage-pin', 'squat-pin', 'claim-name'])

const OPTIONS = {
  dir: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  account: { type: 'string' },
  topic: { type: 'string' },
  batch: { type: 'string' },
  next: { type: 'boolean' },
  'payload-ref': { type: 'string' },
  timeout: { type: 'string' },
  victim: { type: 'string' },
  namespace: { type: 'string' },
  org: { type: 'string' },
  node: { type: 'string' },
  name: { type: 'string' },
  to: { type: 'string' },
  bytes: { type: 'string' },
  count: { type: 'string' },
  message: { type: 'string' },
  datatype: { type: 'string' },
  first: { type: 'string' },
} as const

const ALLOWED: Record<(typeof ATTACKS)[number], readonly string[]> = {
  'garbage-pin': ['topic', 'account'],
  'squat-pin': ['batch', 'next', 'topic', 'payload-ref', 'timeout', 'account'],
  'deliver-under': ['victim', 'batch', 'namespace'],
  'reuse-id': ['message', 'to', 'namespace', 'datatype'],
  'foreign-group': ['org', 'node', 'namespace'],
  'claim-name': ['name', 'account'],
  'flood-blobs': ['to', 'bytes', 'count'],
  'flood-batches': ['to', 'bytes', 'count'],
  'repin-private': ['first', 'namespace', 'timeout'],
}

/** A mistake in the arguments (the CLI prints it with the usage and exits 2). */
export class RogueUsageError extends Error {}

const isAttack = (s: string | undefined): s is (typeof ATTACKS)[number] => (ATTACKS as readonly string[]).includes(s ?? '')

export function parseRogue(argv: string[], defaultDir: string): { dir: string; help: boolean; command?: RogueCommand } {
  let parsed
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true })
  } catch (err) {
    throw new RogueUsageError((err as Error).message)
  }
  const { values: v, positionals: pos } = parsed
  const dir = v.dir ?? defaultDir
  if (v.help) return { dir, help: true }
  const [first, second, ...extra] = pos
  const [org, attack] = isAttack(first) && second === undefined ? [undefined, first] : [first, second]
  if (extra.length > 0) throw new RogueUsageError(`rogue takes [<org>] <attack> (got ${pos.join(' ')})`)
  if (!isAttack(attack)) throw new RogueUsageError(`rogue takes [<org>] <attack>, the attack one of ${ATTACKS.join(', ')}${attack ? ` (got ${attack})` : ''}`)
  for (const key of Object.keys(v)) {
    if (key !== 'dir' && key !== 'help' && key !== 'json' && !ALLOWED[attack].includes(key)) throw new RogueUsageError(`rogue ${attack} takes no --${key}`)
  }
  let who: RogueWho
  if (v.account !== undefined) {
    if (org !== undefined) throw new RogueUsageError(`rogue ${attack}: name an org or --account, not both`)
    if (v.account === 'fresh') who = { fresh: true }
    else if (!/^\d+$/.test(v.account) || Number(v.account) >= HARDHAT_ACCOUNT_COUNT) {
      throw new RogueUsageError(`--account is one of Hardhat's accounts, 0 to ${HARDHAT_ACCOUNT_COUNT - 1}, or fresh (got ${v.account})`)
    } else who = { account: Number(v.account) }
  } else if (org !== undefined) {
    who = org
  } else if (attack === 'claim-name') {
    // A claimant that is no member: a fresh key unless an account is named.
    who = { fresh: true }
  } else {
    throw new RogueUsageError(`rogue ${attack} needs the member that attacks (rogue org1 ${attack} ...)${CHAIN_ONLY.has(attack) ? ' or a chain account (--account N or --account fresh)' : ''}`)
  }
  const need = (name: 'topic' | 'victim' | 'batch' | 'to' | 'bytes' | 'count' | 'message'): string => {
    const value = v[name]
    if (value === undefined || value === '') throw new RogueUsageError(`rogue ${attack} needs --${name}`)
    return value
  }
  const optional = <K extends 'topic' | 'namespace' | 'org' | 'node' | 'name' | 'batch'>(name: K, out: Record<string, string>): void => {
    if (v[name] !== undefined) out[name] = v[name]
  }
  let run: RogueAttack
  switch (attack) {
    case 'garbage-pin':
      run = { attack, topic: need('topic') }
      break
    case 'squat-pin': {
      if ((v.batch === undefined) === (v.next !== true)) throw new RogueUsageError('rogue squat-pin takes --batch ID or --next (the next pin of another member in the pool), one of the two')
      const o: Record<string, string> = {}
      optional('batch', o)
      optional('topic', o)
      run = { attack, next: v.next === true, ...o, ...(v['payload-ref'] !== undefined ? { payloadRef: v['payload-ref'] } : {}), timeoutMs: seconds(v.timeout, 30) }
      break
    }
    case 'deliver-under': {
      const o: Record<string, string> = {}
      optional('namespace', o)
      run = { attack, victim: need('victim'), batch: need('batch'), ...o }
      break
    }
    case 'reuse-id': {
      const o: Record<string, string> = {}
      optional('namespace', o)
      const to = orgList(v.to, 'reuse-id', 'to')
      const datatype = v.datatype === undefined ? undefined : /^([^/]+)\/([^/]+)$/.exec(v.datatype)
      if (datatype === null) throw new RogueUsageError('rogue reuse-id: --datatype is NAME/VERSION')
      run = { attack, message: need('message'), ...(to ? { to } : {}), ...o, ...(datatype ? { datatype: { name: datatype[1]!, version: datatype[2]! } } : {}) }
      break
    }
    case 'foreign-group': {
      const o: Record<string, string> = {}
      optional('org', o)
      optional('node', o)
      optional('namespace', o)
      run = { attack, ...o }
      break
    }
    case 'claim-name': {
      const o: Record<string, string> = {}
      optional('name', o)
      run = { attack, ...o }
      break
    }
    case 'repin-private': {
      const o: Record<string, string> = {}
      optional('namespace', o)
      const first = orgList(v.first, 'repin-private', 'first')
      run = { attack, ...(first ? { first } : {}), ...o, timeoutMs: seconds(v.timeout, 30) }
      break
    }
    case 'flood-blobs':
    case 'flood-batches': {
      const count = need('count')
      const what = attack === 'flood-blobs' ? 'blobs' : 'batches'
      if (!/^\d+$/.test(count) || Number(count) < 1 || Number(count) > 1_000_000) throw new RogueUsageError(`--count is a number of ${what} from 1 to 1000000 (got ${count})`)
      run = { attack, to: need('to'), bytes: byteCount(need('bytes')), count: Number(count) }
      break
    }
  }
  return { dir, help: false, command: { verb: 'rogue', who, run, json: v.json ?? false } }
}

/** `--to org0,org2`: one or more orgs, comma-separated; undefined when the option is not given. */
function orgList(text: string | undefined, attack: string, option: string): string[] | undefined {
  const orgs = text === undefined ? undefined : text.split(',').map((x) => x.trim()).filter((x) => x !== '')
  if (orgs !== undefined && orgs.length === 0) throw new RogueUsageError(`rogue ${attack}: --${option} names one or more orgs, comma-separated`)
  return orgs
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3 }

/** `1048576`, `64KiB`, `1.5GiB`, `10MB`: a number of bytes. */
export function byteCount(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmg]i?b?)?$/i.exec(text.trim())
  const unit = UNITS[(m?.[2] ?? '').toLowerCase()]
  if (!m || unit === undefined) throw new RogueUsageError(`--bytes is a number of bytes, optionally with KiB, MiB, GiB, kB, MB or GB (got ${text})`)
  const n = Math.round(Number(m[1]) * unit)
  if (!Number.isSafeInteger(n) || n < 1) throw new RogueUsageError(`--bytes must be at least 1 (got ${text})`)
  return n
}

function seconds(text: string | undefined, dflt: number): number {
  if (text === undefined) return dflt * 1000
  if (!/^\d+(\.\d+)?$/.test(text) || Number(text) <= 0) throw new RogueUsageError(`--timeout is in seconds (got ${text})`)
  return Math.round(Number(text) * 1000)
}
