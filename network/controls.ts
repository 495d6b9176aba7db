/**
 * Test controls of a running local network, working from its state folder: the one implementation behind
 * `npm run network -- <verb>` (network/cli.ts, a thin parser over this) and the methods of `startNetwork()`'s handle.
 *
 * - processes: pause/resume (SIGSTOP/SIGCONT: the process stops answering and working, nothing is lost), kill
 *   (SIGKILL by default), restart (started again detached with its first arguments, recorded in pids.json);
 * - a member's private deliveries to another org (hold, release, drop) and its reading of the chain or of IPFS
 *   (hold, release), through the member's admin API (`/admin/v1`, served only because the local network configures
 *   its members with `"admin": true`, with the admin token each member keeps in its data folder);
 * - the chain's mining (automine off and on, mine n blocks), over its JSON-RPC;
 * - a message's trace gathered from every member, and verify;
 * - a hostile member (`rogue`): the attacks of network/rogue/member.ts, from a member's own keys or a chain account.
 *
 * Nothing here is kept outside the processes themselves: pids.json is the record of which process runs as which
 * PID (changed under its lock), the node controls live in each node's memory (a restart of the member undoes them)
 * and the mining switch in the chain's (a restarted chain automines again). `network:down` resumes a paused process
 * before stopping it (see stopPid).
 */
import { readFileSync } from 'node:fs'
import { layout, type Layout } from './layout.js'
import { readDescription, readPids, stopRecorded, updatePids, type MemberDescription, type NetworkDescription } from './description.js'
import { isAlive, isPaused, signalPid, sleep } from './process.js'
import { POSTGRES_PROCESS } from './postgres/cluster.js'
import { memberDatabaseUrl, readDatabaseRecord } from './startup/database.js'
import { postgresSpec } from './startup/postgres.js'
import { chainSpec, ipfsSpec, nodeSpec, spawnProgram, waitProcessReady, type ProgramSpec } from './specs.js'
import { ensureBuild } from './build.js'
import { readyTimeoutMs } from './readiness.js'
import { errorText, memberRequest } from './inspect.js'
import { rpcCall } from './probe.js'
import { traceMessage, type NetworkTrace } from './trace.js'
import { verifyNetwork, type VerifyOptions, type VerifyReport } from './verify.js'
import type { NodeConfigFile } from '../node/config.js'
import { networkCommand } from './command-line.js'
import { adminHeaders } from './admin-auth.js'
import { RogueMember, type RogueWho } from './rogue/member.js'

/** A mistake or a state that the user should be told about in one line (the CLI prints it and exits 1). */
export class ControlError extends Error {}

/** Which private deliveries a hold, release or drop is about: all from `from` to `to`, or one message's, or one batch's. */
export interface DeliverySelector {
  from: string
  to: string
  message?: string
  batch?: string
}

/** Deliveries a control applies to: all to an org, or those of one message or batch. */
export interface DeliveryRule {
  to: string
  message?: string
  batch?: string
}

/** A member's controls, as `GET /admin/v1/controls` answers them. */
export interface MemberControls {
  exchange: { held: DeliveryRule[]; dropped: DeliveryRule[] }
  chain: { held: boolean }
  ipfs: { held: boolean }
}

export type ReadingSource = 'chain' | 'ipfs'

export interface ProcessInfo {
  name: string
  /** The member it runs, for a node. */
  org?: string
  pid: number
  logFile: string
  state: 'running' | 'paused' | 'down'
}

/** The part of the controls both the CLI and the handle offer. */
export interface NetworkControlMethods {
  pause(name: string): Promise<void>
  resume(name: string): Promise<void>
  kill(name: string, signal?: NodeJS.Signals): Promise<void>
  restart(name: string): Promise<void>
  hold(sel: DeliverySelector): Promise<MemberControls>
  release(sel: DeliverySelector): Promise<MemberControls>
  drop(sel: DeliverySelector): Promise<{ dropped: DeliveryRule[] }>
  holdReading(member: string, source: ReadingSource): Promise<MemberControls>
  releaseReading(member: string, source: ReadingSource): Promise<MemberControls>
  controlsOf(member: string): Promise<MemberControls>
  mining(on: boolean): Promise<void>
  mine(blocks?: number): Promise<number>
  trace(messageId: string, opts?: { namespace?: string }): Promise<NetworkTrace>
  verify(opts?: VerifyOptions): Promise<VerifyReport>
  /** A hostile member: `'org1'` (its keys and node certificate), or a chain account (`{ account: 15 }`, `{ fresh: true }`). */
  rogue(who: RogueWho): RogueMember
}

export class NetworkControls implements NetworkControlMethods {
  readonly dir: string
  readonly description: NetworkDescription
  private readonly L: Layout
  private readonly readyTimeout: number

  /**
   * Controls of the network in `dir`. Throws a ControlError when the folder holds no network description (a
   * network that never became ready, or a wrong `--dir`).
   */
  constructor(dir: string, opts: { description?: NetworkDescription; readyTimeoutMs?: number } = {}) {
    this.L = layout(dir)
    this.dir = this.L.root
    const d = opts.description ?? readDescription(this.L.networkJson)
    if (!d) throw new ControlError(`no network in ${this.dir} (no network.json): start one with ${networkCommand('up')} --dir ${dir}`)
    this.description = d
    this.readyTimeout = opts.readyTimeoutMs ?? 60_000
  }

  // --- naming ---

  /** A member by org (`org1`), `org1/node1` or node name (`node1`). */
  member(name: string): MemberDescription {
    const [org, node] = name.split('/')
    const m = this.description.members.find((x) => (node !== undefined ? x.org === org && x.node === node : x.org === name || x.node === name))
    if (!m) {
      throw new ControlError(`unknown member ${JSON.stringify(name)}: the network in ${this.dir} has ${this.description.members.map((x) => x.org).join(', ')}`)
    }
    return m
  }

  /** A process of the network: `chain`, `ipfs`, `postgres` (a network's own server), or a member's node (by any of the member's names). */
  processName(name: string): { process: string; member?: MemberDescription } {
    if (name === 'chain' || name === 'ipfs') return { process: name }
    if (name === POSTGRES_PROCESS) {
      const db = this.description.database
      if (db?.engine === 'postgres' && db.managed) return { process: name }
      throw new ControlError(`the network in ${this.dir} runs no PostgreSQL of its own (${db?.engine === 'postgres' ? `its members use ${db.server}` : 'its members are on sql.js'})`)
    }
    const m = this.member(name)
    return { process: m.node, member: m }
  }

  /** Every process pids.json names, with its state now. */
  processes(): ProcessInfo[] {
    return readPids(this.L.pidsJson).processes.map((p) => {
      const org = this.description.members.find((m) => m.node === p.name)?.org
      return { name: p.name, ...(org ? { org } : {}), pid: p.pid, logFile: this.L.log(p.name), state: !isAlive(p.pid) ? 'down' : isPaused(p.pid) ? 'paused' : 'running' }
    })
  }

  /** Throws a ControlError naming the folder when none of its processes runs. */
  assertRunning(): void {
    if (!this.processes().some((p) => p.state !== 'down')) {
      throw new ControlError(`the network in ${this.dir} is not running: start it with ${networkCommand('up')} --dir ${this.dir}`)
    }
  }

  private pidOf(processName: string, label: string): number {
    const p = readPids(this.L.pidsJson).processes.find((x) => x.name === processName)
    if (!p || !isAlive(p.pid)) {
      this.assertRunning()
      throw new ControlError(`${label} is not running${p ? ` (pid ${p.pid} has gone)` : ''}: start it again with ${networkCommand('restart')} ${label}`)
    }
    return p.pid
  }

  /** The whole URL (password included) of a member's PostgreSQL database, from its config; undefined on sql.js. */
  databaseUrl(member: string): string | undefined {
    return memberDatabaseUrl(this.L, this.member(member).org)
  }

  // --- processes ---

  /** Stops the process (SIGSTOP): its ports stay open but nothing answers or moves until `resume`. */
  async pause(name: string): Promise<void> {
    const { process } = this.processName(name)
    const pid = this.pidOf(process, name)
    signalProcess(process, pid, 'SIGSTOP')
    await until(() => isPaused(pid) || !isAlive(pid), 5000)
  }

  /** Lets a paused process run again (SIGCONT); it carries on where it stopped. */
  async resume(name: string): Promise<void> {
    const { process } = this.processName(name)
    const pid = this.pidOf(process, name)
    signalProcess(process, pid, 'SIGCONT')
    await until(() => !isPaused(pid), 5000)
  }

  /** Sends `signal` (SIGKILL unless told) and, for a signal that ends it, waits until the process has gone. */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const { process } = this.processName(name)
    const pid = this.pidOf(process, name)
    signalProcess(process, pid, signal)
    if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') {
      // A paused process only acts on SIGTERM once it runs again.
      if (signal !== 'SIGKILL') signalProcess(process, pid, 'SIGCONT')
      await until(() => !isAlive(pid), signal === 'SIGKILL' ? 10_000 : 30_000, `${name} (pid ${pid}) to exit after ${signal}`)
    }
  }

  /**
   * Starts the process again with the arguments, ports and folder it had (a running one is stopped first, with
   * SIGTERM), detached so that it outlives the caller, records its new PID in pids.json (so `network:down`, or the
   * `network:up` that started the network, stops it) and waits until it answers.
   */
  async restart(name: string): Promise<void> {
    const { process } = this.processName(name)
    const recorded = this.processes()
    this.assertOthersRunning(process, recorded)
    const previous = recorded.find((x) => x.name === process)
    if (previous && previous.state !== 'down') await stopRecorded(previous, 15_000)
    const spec = await this.specOf(process)
    const p = spawnProgram(await ensureBuild(), spec)
    updatePids(this.L.pidsJson, (pids) => {
      const processes = [...pids.processes]
      const i = processes.findIndex((x) => x.name === process)
      if (i >= 0) processes[i] = { name: process, pid: p.pid }
      else processes.push({ name: process, pid: p.pid })
      return { ...pids, processes }
    })
    await waitProcessReady(p, spec.what, readyTimeoutMs(this.readyTimeout, spec.stateDirs), spec.check)
  }

  /** A restart joins a running network: some other process of it must be up. */
  private assertOthersRunning(processName: string, recorded: ProcessInfo[]): void {
    if (!recorded.some((p) => p.name !== processName && p.state !== 'down')) {
      throw new ControlError(`the network in ${this.dir} is not running: start it with ${networkCommand('up')} --dir ${this.dir}`)
    }
  }

  private async specOf(processName: string): Promise<ProgramSpec> {
    const d = this.description
    if (processName === POSTGRES_PROCESS) {
      const r = readDatabaseRecord(this.L)
      if (r?.engine !== 'postgres' || !r.managed) throw new ControlError(`${this.L.databaseJson} names no PostgreSQL server of the network's own`)
      return postgresSpec(this.L, r, () => undefined)
    }
    if (processName === 'chain') return chainSpec(this.L, Number(new URL(d.chain.rpc).port))
    if (processName === 'ipfs') return ipfsSpec(this.L, Number(new URL(d.ipfs.api).port), Number(new URL(d.ipfs.gateway).port))
    const m = d.members.find((x) => x.node === processName)!
    const cfg = JSON.parse(readFileSync(this.L.member(m.org).config, 'utf8')) as NodeConfigFile
    return nodeSpec(this.L, cfg)
  }

  // --- a member's deliveries and reading ---

  async hold(sel: DeliverySelector): Promise<MemberControls> {
    return this.exchange('hold', sel)
  }

  async release(sel: DeliverySelector): Promise<MemberControls> {
    return this.exchange('release', sel)
  }

  async drop(sel: DeliverySelector): Promise<{ dropped: DeliveryRule[] }> {
    return this.exchange('drop', sel)
  }

  async holdReading(member: string, source: ReadingSource): Promise<MemberControls> {
    return this.admin(this.member(member), 'POST', `${readingSource(source)}/hold`, {})
  }

  async releaseReading(member: string, source: ReadingSource): Promise<MemberControls> {
    return this.admin(this.member(member), 'POST', `${readingSource(source)}/release`, {})
  }

  async controlsOf(member: string): Promise<MemberControls> {
    return this.admin(this.member(member), 'GET', 'controls')
  }

  private async exchange<T>(verb: 'hold' | 'release' | 'drop', sel: DeliverySelector): Promise<T> {
    const from = this.member(sel.from)
    const to = this.member(sel.to)
    if (from.org === to.org) throw new ControlError(`${verb}: from and to are the same member (${from.org})`)
    if (sel.message !== undefined && sel.batch !== undefined) throw new ControlError(`${verb}: name a message or a batch, not both`)
    const body = { to: to.org, ...(sel.message !== undefined ? { message: sel.message } : {}), ...(sel.batch !== undefined ? { batch: sel.batch } : {}) }
    return this.admin(from, 'POST', `exchange/${verb}`, body)
  }

  private async admin<T>(m: MemberDescription, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    this.pidOf(m.node, m.org)
    if (this.processes().find((p) => p.name === m.node)?.state === 'paused') throw new ControlError(`${m.org} is paused: resume it first (${networkCommand('resume')} ${m.org})`)
    let r
    try {
      r = await memberRequest<T>(m, method, `/admin/v1/${path}`, body, undefined, adminHeaders(this.L, m.org))
    } catch (err) {
      throw new ControlError((err as Error).message)
    }
    if (r.status === 404 && isNoRoute(r.body)) {
      throw new ControlError(
        `${m.org} does not serve the admin API (/admin/v1/${path} is 404): its config ${this.L.member(m.org).config} lacks "admin": true ` +
          '(the local network sets it; a member started from a plain config has no controls)',
      )
    }
    if (r.status < 200 || r.status > 299) throw new ControlError(`${m.org} refused ${method} /admin/v1/${path}: ${r.status} ${errorText(r.body)}`)
    return r.body
  }

  // --- the chain ---

  /** Turns the chain's automine off (transactions wait in its pool until `mine`) or back on (pending ones are mined). */
  async mining(on: boolean): Promise<void> {
    await this.rpc('evm_setAutomine', [on])
    // Turning automine back on leaves what is pending in the pool: mined now, as a chain that mines would have.
    if (on && (await this.pendingTransactions().catch(() => 1)) > 0) await this.rpc('evm_mine', [])
  }

  /** Whether the chain automines. */
  async isMining(): Promise<boolean> {
    return (await this.rpc<boolean>('hardhat_getAutomine', [])) === true
  }

  /** Mines `blocks` blocks (the first holds every pending transaction) and answers the new head block number. */
  async mine(blocks = 1): Promise<number> {
    if (!Number.isInteger(blocks) || blocks < 1) throw new ControlError(`mine: the number of blocks must be a whole number of at least 1 (got ${blocks})`)
    for (let i = 0; i < blocks; i++) await this.rpc('evm_mine', [])
    return Number(await this.rpc<string>('eth_blockNumber', []))
  }

  /** Transactions sent to the chain and not mined yet (only ever more than 0 while mining is off). */
  async pendingTransactions(): Promise<number> {
    return Number(await this.rpc<string>('eth_getBlockTransactionCountByNumber', ['pending']))
  }

  private async rpc<T>(method: string, params: unknown[]): Promise<T> {
    this.pidOf('chain', 'chain')
    let result: T | undefined
    try {
      result = await rpcCall<T>(this.description.chain.rpc, method, params)
    } catch (err) {
      throw new ControlError(`the chain (${this.description.chain.rpc}): ${(err as Error).message}`)
    }
    if (result === undefined) throw new ControlError(`the chain (${this.description.chain.rpc}) did not answer ${method}`)
    return result
  }

  // --- reading ---

  async trace(messageId: string, opts: { namespace?: string } = {}): Promise<NetworkTrace> {
    this.assertRunning()
    return traceMessage(this.description, messageId, { ...opts, unavailable: this.unavailableMembers() })
  }

  async verify(opts: VerifyOptions = {}): Promise<VerifyReport> {
    this.assertRunning()
    return verifyNetwork(this.description, { ...opts, unavailable: { ...this.unavailableMembers(), ...opts.unavailable } })
  }

  // --- hostility ---

  rogue(who: RogueWho): RogueMember {
    this.assertRunning()
    return new RogueMember(this, who)
  }

  /** Members whose node is paused or not running, with why: asking them would only time out. */
  unavailableMembers(): Record<string, string> {
    const out: Record<string, string> = {}
    const procs = this.processes()
    for (const m of this.description.members) {
      const p = procs.find((x) => x.name === m.node)
      if (!p || p.state === 'down') out[m.org] = `${m.org} is not running`
      else if (p.state === 'paused') out[m.org] = `${m.org} is paused`
    }
    return out
  }
}

/**
 * Signals a process of the network; PostgreSQL as a whole: its server runs a process per connection in the group of
 * the one recorded (spawned detached, it leads its own group), and a pause or a crash of PostgreSQL is of all of them.
 */
function signalProcess(name: string, pid: number, signal: NodeJS.Signals): void {
  signalPid(name === POSTGRES_PROCESS ? -pid : pid, signal)
}

function readingSource(s: string): ReadingSource {
  if (s !== 'chain' && s !== 'ipfs') throw new ControlError(`what a member reads is chain or ipfs (got ${JSON.stringify(s)})`)
  return s
}

/** Whether a 404 says no route serves the path (rather than, say, an unknown message or batch in the body). */
function isNoRoute(body: unknown): boolean {
  return /no route for/i.test(errorText(body))
}

async function until(done: () => boolean, timeoutMs: number, what?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() > deadline) {
      if (what) throw new ControlError(`timed out after ${timeoutMs} ms waiting for ${what}`)
      return
    }
    await sleep(10)
  }
}

export const NO_CONTROLS = 'no controls in force'

/** A member's controls in words. */
export function describeControls(c: MemberControls): string {
  const parts: string[] = []
  for (const h of c.exchange.held) parts.push(`holds deliveries to ${h.to}${ruleText(h)}`)
  for (const d of c.exchange.dropped) parts.push(`dropped deliveries to ${d.to}${ruleText(d)}`)
  if (c.chain.held) parts.push('not reading the chain')
  if (c.ipfs.held) parts.push('not reading IPFS')
  return parts.length === 0 ? NO_CONTROLS : parts.join('; ')
}

/** Which deliveries a rule names, as words to append ("" for all of them). */
export const ruleText = (r: { message?: string; batch?: string }): string =>
  r.message && r.batch ? ` of message ${r.message} (batch ${r.batch})` : r.message ? ` of message ${r.message}` : r.batch ? ` of batch ${r.batch}` : ''
