/**
 * `npm run network -- <verb> ...`: a thin parser over network/controls.ts (the handle of `startNetwork()` has the
 * same methods). `parseVerb` only reads the arguments; `runVerb` runs the parsed command on the network in `--dir`.
 */
import { parseArgs } from 'node:util'
import { ControlError, describeControls, NetworkControls, ruleText, type DeliverySelector, type ReadingSource } from './controls.js'
import { formatTrace } from './trace.js'
import { formatVerify, verifyNetwork } from './verify.js'
import { describeMembers } from './hosts/describe.js'
import { confirmedOnTopic, waitConfirmed, waitIdle, WaitTimeoutError } from './suite.js'
import { networkCommand } from './command-line.js'
import { parseRogue, RogueUsageError, type RogueCommand } from './rogue/args.js'
import { RogueError, type RogueMember } from './rogue/member.js'
import { rogueLine, type RogueResult } from './rogue/results.js'
import type { NetworkDescription } from './description.js'
import { moveMemberEngine } from './move-db.js'
import { engineLabel } from '../node/commands/move-member.js'
import type { EngineName } from '../node/db/engine.js'

export const VERBS = new Set(['status', 'pause', 'resume', 'kill', 'restart', 'hold', 'release', 'drop', 'mining', 'mine', 'trace', 'verify', 'wait', 'confirmed', 'rogue', 'move-db'])

export type Command =
  | { verb: 'status' }
  | { verb: 'pause' | 'resume' | 'restart'; target: string }
  | { verb: 'kill'; target: string; signal: NodeJS.Signals }
  | { verb: 'hold' | 'release' | 'drop'; deliveries: DeliverySelector }
  | { verb: 'hold' | 'release'; member: string; reading: ReadingSource }
  | { verb: 'mining'; on: boolean }
  | { verb: 'mine'; blocks: number }
  | { verb: 'trace'; message: string; namespace?: string; json: boolean }
  | { verb: 'verify'; namespaces: string[]; allowBehind: boolean; json: boolean; apis?: string[] }
  | { verb: 'wait'; message: string; members?: string[]; namespace?: string; timeoutMs: number }
  | { verb: 'wait-idle'; timeoutMs: number }
  | { verb: 'confirmed'; member: string; topic: string; namespace: string; json: boolean }
  | { verb: 'move-db'; target: string; to: EngineName; databaseUrl?: string }
  | RogueCommand

/** A mistake in the arguments: the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {}

const OPTIONS = {
  dir: { type: 'string' },
  message: { type: 'string' },
  batch: { type: 'string' },
  namespace: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  'allow-behind': { type: 'boolean' },
  members: { type: 'string' },
  timeout: { type: 'string' },
  signal: { type: 'string' },
  to: { type: 'string' },
  'database-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

/** Which options each verb takes (`--dir` and `--help` go with every one). */
const ALLOWED: Record<string, readonly string[]> = {
  status: [],
  pause: [],
  resume: [],
  restart: [],
  kill: ['signal'],
  hold: ['message', 'batch'],
  release: ['message', 'batch'],
  drop: ['message', 'batch'],
  mining: [],
  mine: [],
  trace: ['namespace', 'json'],
  verify: ['namespace', 'allow-behind', 'json', 'members'],
  wait: ['members', 'namespace', 'timeout'],
  confirmed: ['namespace', 'json'],
  'move-db': ['to', 'database-url'],
}

export function parseVerb(verb: string, argv: string[], defaultDir = '.network'): { dir: string; help: boolean; command?: Command } {
  if (!VERBS.has(verb)) throw new UsageError(`unknown command: ${verb}`)
  if (verb === 'rogue') {
    try {
      return parseRogue(argv, defaultDir)
    } catch (err) {
      throw err instanceof RogueUsageError ? new UsageError(err.message) : err
    }
  }
  let parsed
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const { values, positionals: pos } = parsed
  const dir = values.dir ?? defaultDir
  if (values.help) return { dir, help: true }
  for (const key of Object.keys(values)) {
    if (key !== 'dir' && key !== 'help' && !ALLOWED[verb]!.includes(key)) throw new UsageError(`${verb} takes no --${key}`)
  }
  const arity = (min: number, max: number, what: string): void => {
    if (pos.length < min || pos.length > max) throw new UsageError(`${verb} takes ${what}${pos.length > max ? ` (got ${pos.length} arguments: ${pos.join(' ')})` : ''}`)
  }
  const single = (name: 'namespace'): string | undefined => {
    const v = values[name]
    if (v !== undefined && v.length > 1) throw new UsageError(`${verb} takes one --${name}`)
    return v?.[0]
  }
  const seconds = (): number => {
    if (values.timeout === undefined) return 60_000
    if (!/^\d+(\.\d+)?$/.test(values.timeout) || Number(values.timeout) <= 0) throw new UsageError(`--timeout is in seconds (got ${values.timeout})`)
    return Math.round(Number(values.timeout) * 1000)
  }
  switch (verb) {
    case 'status':
      arity(0, 0, 'no arguments')
      return { dir, help: false, command: { verb } }
    case 'pause':
    case 'resume':
    case 'restart':
      arity(1, 1, 'one member (org1, org1/node1), chain or ipfs')
      return { dir, help: false, command: { verb, target: pos[0]! } }
    case 'kill': {
      arity(1, 1, 'one member (org1, org1/node1), chain or ipfs')
      const signal = (values.signal ?? 'SIGKILL').toUpperCase()
      const name = (signal.startsWith('SIG') ? signal : `SIG${signal}`) as NodeJS.Signals
      if (!SIGNALS.has(name)) throw new UsageError(`--signal must be one of ${[...SIGNALS].join(', ')} (got ${values.signal})`)
      return { dir, help: false, command: { verb, target: pos[0]!, signal: name } }
    }
    case 'hold':
    case 'release':
    case 'drop': {
      const form = verb === 'drop' ? '<from> <to> [--message ID | --batch ID]' : '<from> <to> [--message ID | --batch ID], or <member> chain|ipfs'
      arity(2, 2, form)
      const [a, b] = pos as [string, string]
      if (b === 'chain' || b === 'ipfs') {
        if (verb === 'drop') throw new UsageError(`drop takes ${form}: a member's reading is held and released, not dropped`)
        if (values.message !== undefined || values.batch !== undefined) throw new UsageError(`${verb} <member> ${b} takes no --message or --batch`)
        return { dir, help: false, command: { verb, member: a, reading: b } }
      }
      if (values.message !== undefined && values.batch !== undefined) throw new UsageError(`${verb}: give --message or --batch, not both`)
      return {
        dir,
        help: false,
        command: { verb, deliveries: { from: a, to: b, ...(values.message !== undefined ? { message: values.message } : {}), ...(values.batch !== undefined ? { batch: values.batch } : {}) } },
      }
    }
    case 'mining':
      arity(1, 1, 'off or on')
      if (pos[0] !== 'on' && pos[0] !== 'off') throw new UsageError(`mining takes off or on (got ${pos[0]})`)
      return { dir, help: false, command: { verb, on: pos[0] === 'on' } }
    case 'mine': {
      arity(0, 1, 'an optional number of blocks')
      const raw = pos[0] ?? '1'
      if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 10_000) throw new UsageError(`mine takes a number of blocks from 1 to 10000 (got ${raw})`)
      return { dir, help: false, command: { verb, blocks: Number(raw) } }
    }
    case 'trace': {
      arity(1, 1, 'one message id')
      const namespace = single('namespace')
      return { dir, help: false, command: { verb, message: pos[0]!, ...(namespace !== undefined ? { namespace } : {}), json: values.json ?? false } }
    }
    case 'verify': {
      arity(0, 0, 'no arguments')
      // Members on their own hosts have no state folder in common: they are named by their API URLs instead.
      const apis = values.members?.split(',').map((x) => x.trim()).filter(Boolean)
      if (apis !== undefined && (apis.length === 0 || apis.some((a) => !/^https?:\/\/[^/]+\/?$/.test(a)))) throw new UsageError('verify --members takes the API URL of each member (http://host:port), separated by commas')
      if (apis !== undefined && values.dir !== undefined) throw new UsageError('verify takes --members or --dir, not both')
      return { dir, help: false, command: { verb, namespaces: values.namespace ?? [], allowBehind: values['allow-behind'] ?? false, json: values.json ?? false, ...(apis ? { apis } : {}) } }
    }
    case 'wait': {
      arity(1, 1, 'a message id, or idle')
      if (pos[0] === 'idle') {
        if (values.members !== undefined || values.namespace !== undefined) throw new UsageError('wait idle takes only --timeout')
        return { dir, help: false, command: { verb: 'wait-idle', timeoutMs: seconds() } }
      }
      const namespace = single('namespace')
      const members = values.members?.split(',').map((x) => x.trim()).filter(Boolean)
      if (members !== undefined && members.length === 0) throw new UsageError('--members names at least one member')
      return { dir, help: false, command: { verb, message: pos[0]!, ...(members ? { members } : {}), ...(namespace !== undefined ? { namespace } : {}), timeoutMs: seconds() } }
    }
    case 'confirmed': {
      arity(2, 2, '<member> <topic>')
      return { dir, help: false, command: { verb, member: pos[0]!, topic: pos[1]!, namespace: single('namespace') ?? 'default', json: values.json ?? false } }
    }
    case 'move-db': {
      arity(1, 1, 'one member (org1, org1/node1)')
      const to = values.to
      if (to !== 'postgres' && to !== 'sqljs') throw new UsageError(`move-db takes --to postgres or --to sqljs${to === undefined ? '' : ` (got ${to})`}`)
      const url = values['database-url']
      return { dir, help: false, command: { verb, target: pos[0]!, to, ...(url !== undefined ? { databaseUrl: url } : {}) } }
    }
  }
  throw new UsageError(`unknown command: ${verb}`)
}

const SIGNALS = new Set<NodeJS.Signals>(['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGABRT', 'SIGSEGV', 'SIGUSR1', 'SIGUSR2'])

export interface VerbIo {
  defaultDir: string
  out: (line: string) => void
  err: (line: string) => void
  usage: (problem?: string) => never
}

/** Parses and runs one verb; answers the exit code (usage mistakes go through `io.usage`). */
export async function runVerb(verb: string, argv: string[], io: VerbIo): Promise<number> {
  let parsed
  try {
    parsed = parseVerb(verb, argv, io.defaultDir)
  } catch (err) {
    if (err instanceof UsageError) io.usage(err.message)
    throw err
  }
  if (parsed.help || !parsed.command) io.usage()
  try {
    const cmd = parsed.command
    if (cmd.verb === 'verify' && cmd.apis !== undefined) return await verifyMembers(cmd.apis, cmd, io)
    const c = new NetworkControls(parsed.dir)
    return await execute(c, cmd, io)
  } catch (err) {
    if (err instanceof ControlError || err instanceof WaitTimeoutError || err instanceof RogueError) {
      io.err(`network ${verb}: ${err.message}`)
      return 1
    }
    throw err
  }
}

/** verify over members named by their API URLs (members on their own hosts: network/hosts/describe.ts). */
async function verifyMembers(apis: string[], cmd: { namespaces: string[]; allowBehind: boolean; json: boolean }, io: VerbIo): Promise<number> {
  const d = await describeMembers(apis).catch((err: Error) => {
    throw new ControlError(err.message)
  })
  const r = await verifyNetwork(d, { namespaces: cmd.namespaces, allowBehind: cmd.allowBehind }).catch((err: Error) => {
    throw new ControlError(err.message)
  })
  io.out(cmd.json ? JSON.stringify(r, null, 2) : formatVerify(r))
  return r.ok ? 0 : 1
}

async function execute(c: NetworkControls, cmd: Command, io: VerbIo): Promise<number> {
  const say = io.out
  switch (cmd.verb) {
    case 'status': {
      c.assertRunning()
      for (const p of c.processes()) say(`${(p.org ? `${p.org}/${p.name}` : p.name).padEnd(14)} ${p.state.padEnd(8)} pid ${p.pid}`)
      say(`database       ${describeDatabaseLine(c.description)}`)
      const mining = await c.isMining().catch(() => undefined)
      if (mining !== undefined) {
        const pending = await c.pendingTransactions().catch(() => 0)
        say(`chain mining ${mining ? 'on' : `off (${pending} transaction${pending === 1 ? '' : 's'} waiting)`}`)
      }
      for (const m of c.description.members) {
        const controls = await c.controlsOf(m.org).catch((err: Error) => err)
        say(`${m.org.padEnd(14)} ${controls instanceof Error ? `controls unknown: ${controls.message}` : describeControls(controls)}`)
      }
      return 0
    }
    case 'pause':
      await c.pause(cmd.target)
      say(`paused ${cmd.target}: it answers nothing and does nothing until: ${networkCommand('resume')} ${cmd.target}`)
      return 0
    case 'resume':
      await c.resume(cmd.target)
      say(`resumed ${cmd.target}`)
      return 0
    case 'kill':
      await c.kill(cmd.target, cmd.signal)
      say(`sent ${cmd.signal} to ${cmd.target}${cmd.signal === 'SIGKILL' || cmd.signal === 'SIGTERM' || cmd.signal === 'SIGINT' ? '; it has exited' : ''}`)
      return 0
    case 'restart':
      await c.restart(cmd.target)
      say(`restarted ${cmd.target}: pid ${c.processes().find((p) => p.name === c.processName(cmd.target).process)?.pid ?? '?'}, ready`)
      return 0
    case 'hold':
    case 'release':
    case 'drop': {
      if ('reading' in cmd) {
        const controls = cmd.verb === 'hold' ? await c.holdReading(cmd.member, cmd.reading) : await c.releaseReading(cmd.member, cmd.reading)
        say(`${c.member(cmd.member).org} ${cmd.verb === 'hold' ? 'no longer reads' : 'reads'} ${cmd.reading === 'chain' ? "the chain's pins" : 'IPFS'}${cmd.verb === 'hold' ? ' (it falls behind)' : ''}`)
        say(`${c.member(cmd.member).org}: ${describeControls(controls)}`)
        return 0
      }
      const sel = cmd.deliveries
      const from = c.member(sel.from).org
      const to = c.member(sel.to).org
      const which = sel.message ? ` of message ${sel.message}` : sel.batch ? ` of batch ${sel.batch}` : ''
      if (cmd.verb === 'drop') {
        const r = await c.drop(sel)
        say(
          r.dropped.length === 0
            ? `${from} had no delivery${which} to ${to} to drop${which ? '; one queued later for it will be dropped' : ''}`
            : `${from} dropped its deliveries to ${to}${r.dropped.map(ruleText).join(',')} (never sent while ${from} runs; a restart of ${from} sends them)`,
        )
        return 0
      }
      const controls = cmd.verb === 'hold' ? await c.hold(sel) : await c.release(sel)
      say(`${from} ${cmd.verb === 'hold' ? 'holds' : 'released'} its private deliveries${which} to ${to}`)
      say(`${from}: ${describeControls(controls)}`)
      return 0
    }
    case 'mining':
      await c.mining(cmd.on)
      say(cmd.on ? 'the chain mines every transaction as it comes again' : `the chain no longer mines: transactions wait until ${networkCommand('mine')}`)
      return 0
    case 'mine': {
      const head = await c.mine(cmd.blocks)
      say(`mined ${cmd.blocks} block${cmd.blocks === 1 ? '' : 's'}; the head is block ${head}`)
      return 0
    }
    case 'trace': {
      const t = await c.trace(cmd.message, cmd.namespace !== undefined ? { namespace: cmd.namespace } : {}).catch((err: Error) => {
        throw err instanceof ControlError ? err : new ControlError(err.message)
      })
      say(cmd.json ? JSON.stringify(t, null, 2) : formatTrace(t))
      return 0
    }
    case 'verify': {
      const r = await c.verify({ namespaces: cmd.namespaces, allowBehind: cmd.allowBehind }).catch((err: Error) => {
        throw err instanceof ControlError ? err : new ControlError(err.message)
      })
      say(cmd.json ? JSON.stringify(r, null, 2) : formatVerify(r))
      return r.ok ? 0 : 1
    }
    case 'wait': {
      c.assertRunning()
      const states = await waitConfirmed(c, cmd.message, { timeoutMs: cmd.timeoutMs, ...(cmd.members ? { members: cmd.members } : {}), ...(cmd.namespace ? { namespace: cmd.namespace } : {}) })
      for (const s of Object.values(states)) say(`${s.org.padEnd(8)} ${s.state}${s.rejectReason ? `: ${s.rejectReason}` : ''}`)
      return 0
    }
    case 'wait-idle':
      c.assertRunning()
      await waitIdle(c, { timeoutMs: cmd.timeoutMs })
      say('idle: nothing to mine, pending or undelivered; every member at the chain head')
      return 0
    case 'confirmed': {
      c.assertRunning()
      const msgs = await confirmedOnTopic(c, cmd.member, cmd.topic, cmd.namespace)
      if (cmd.json) say(JSON.stringify(msgs, null, 2))
      else for (const m of msgs) say(`${m.header.id}  ${m.header.author.replace(/^did:firefly:org\//, '').padEnd(8)} ${m.confirmed ?? ''}`)
      return 0
    }
    case 'move-db': {
      c.assertRunning()
      const r = await moveMemberEngine(c, cmd.target, { to: cmd.to, ...(cmd.databaseUrl !== undefined ? { databaseUrl: cmd.databaseUrl } : {}), log: say })
      const rows = r.tables.reduce((n, t) => n + t.rows, 0)
      say(`${r.org} moved from ${engineLabel(r.from)} to ${engineLabel(r.to)}: ${r.tables.length} tables, ${rows} rows, each checked (count and sha256); it runs again`)
      say(`its previous state is kept, untouched, at ${r.kept}: remove it once you no longer need it`)
      return 0
    }
    case 'rogue': {
      const r = await runAttack(c.rogue(cmd.who), cmd)
      say(cmd.json ? JSON.stringify(r, null, 2) : rogueLine(r))
      return 0
    }
  }
}

function runAttack(r: RogueMember, cmd: RogueCommand): Promise<RogueResult> {
  const { run } = cmd
  switch (run.attack) {
    case 'garbage-pin':
      return r.garbagePin(run)
    case 'squat-pin':
      return r.squatPin(run)
    case 'deliver-under':
      return r.deliverUnder(run)
    case 'reuse-id':
      return r.reuseId(run)
    case 'foreign-group':
      return r.foreignGroup(run)
    case 'claim-name':
      return r.claimName(run)
    case 'flood-blobs':
      return r.floodBlobs(run)
    case 'flood-batches':
      return r.floodBatches(run)
    case 'repin-private':
      return r.repinPrivate(run)
  }
}

/** Where the members keep their state, in one line: the engine, the server and each member's database. */
function describeDatabaseLine(d: NetworkDescription): string {
  const db = d.database
  if (db?.engine !== 'postgres') return 'sql.js: each member in memory, journaled to its data folder'
  const names = d.members.map((m) => (m.database ? `${m.org} ${new URL(m.database).pathname.slice(1)}` : m.org)).join(', ')
  return `PostgreSQL on ${db.server}${db.managed ? " (the network's own, process postgres)" : ''}: ${names}`
}
