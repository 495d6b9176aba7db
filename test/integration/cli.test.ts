import { expect } from 'chai'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { layout } from '../../network/layout.js'
import { readPids, type NetworkDescription } from '../../network/description.js'
import { assertPortFree, freePort, isAlive, projectRoot, stopPid, waitFor } from '../../network/process.js'
import { stopNetwork } from '../../network/network.js'
import { LAUNCHER, tempDir } from '../support/network.js'

interface Run {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exit: Promise<number | null>
}

function cli(args: string[]): Run {
  const child = spawn(process.execPath, [LAUNCHER, ...args], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  return { child, stdout: () => out, stderr: () => err, exit: new Promise((res) => child.once('exit', (code) => res(code))) }
}

/** A base port whose whole range (chain, IPFS, one member) is free right now. */
async function freeBase(): Promise<number> {
  for (;;) {
    const base = await freePort()
    if (base > 65_000) continue
    try {
      for (const off of [0, 1, 2, 10, 11, 12, 13]) await assertPortFree(base + off, 'probe')
      return base
    } catch {
      // try another
    }
  }
}

describe('the network command', function () {
  this.timeout(180_000)
  const dir = tempDir('cli')
  const children: ChildProcess[] = []

  after(async () => {
    for (const c of children) if (c.pid && isAlive(c.pid)) await stopPid(c.pid)
    await stopNetwork(dir)
    const left = readPids(layout(dir).pidsJson).processes.filter((p) => isAlive(p.pid))
    rmSync(dir, { recursive: true, force: true })
    expect(left).to.deep.equal([])
  })

  it('prints the usage for an unknown option', async () => {
    const r = cli(['up', '--bogus'])
    expect(await r.exit).to.equal(2)
    expect(r.stderr()).to.contain("Unknown option '--bogus'")
    expect(r.stderr()).to.contain('usage:')
    expect(r.stderr()).to.contain('--members N')
  })

  it('prints the usage for a verb\'s mistakes (exit 2), and names a folder without a network (exit 1)', async () => {
    const r = cli(['hold', 'org0'])
    expect(await r.exit).to.equal(2)
    expect(r.stderr()).to.contain('hold takes <from> <to> [--message ID | --batch ID], or <member> chain|ipfs')
    expect(r.stderr()).to.contain('usage:')
    expect(r.stderr()).to.contain('mining off|on')
    const mining = cli(['mining', 'maybe'])
    expect(await mining.exit).to.equal(2)
    expect(mining.stderr()).to.contain('mining takes off or on (got maybe)')
    const verb = cli(['frobnicate'])
    expect(await verb.exit).to.equal(2)
    expect(verb.stderr()).to.contain('unknown command: frobnicate')
    const help = cli(['trace', '--help'])
    expect(await help.exit).to.equal(2)
    expect(help.stderr()).to.contain('trace <message id> [--namespace NS] [--json]')
    const none = cli(['pause', 'org1', '--dir', dir])
    expect(await none.exit).to.equal(1)
    expect(none.stderr()).to.contain(`no network in ${dir} (no network.json): start one with npm run network:up`)
  })

  it('names a busy port and starts nothing', async () => {
    const base = await freeBase()
    const blocker = createServer().listen(base + 1, '127.0.0.1')
    await new Promise((r) => blocker.once('listening', r))
    try {
      const r = cli(['up', '--dir', dir, '--base-port', String(base), '--members', '1'])
      expect(await r.exit).to.equal(1)
      expect(r.stderr()).to.contain(`port ${base + 1} (IPFS API) is already in use`)
      expect(readPids(layout(dir).pidsJson).processes).to.deep.equal([])
    } finally {
      blocker.close()
    }
  })

  it('runs in the foreground, shows live status, and Ctrl-C stops every process', async () => {
    const base = await freeBase()
    const r = cli(['up', '--dir', dir, '--base-port', String(base), '--members', '1'])
    children.push(r.child)
    await waitFor('the live status', () => /org0\s+up\s+chain ok/.test(r.stdout()), { timeoutMs: 120_000 })
    expect(r.stdout()).to.contain(`http://127.0.0.1:${base + 10}`)
    expect(r.stdout()).to.match(/ready in \d+\.\d s/)
    const pids = readPids(layout(dir).pidsJson).processes
    expect(pids.map((p) => p.name)).to.deep.equal(['chain', 'ipfs', 'node0'])
    r.child.kill('SIGINT')
    expect(await r.exit).to.equal(0)
    expect(pids.filter((p) => isAlive(p.pid))).to.deep.equal([])
  })

  it('resumes the same network on the same folder, detached, and network:down stops it', async () => {
    const before = JSON.parse(readFileSync(layout(dir).networkJson, 'utf8')) as NetworkDescription
    const r = cli(['up', '--dir', dir, '--detach', '--members', '2'])
    expect(await r.exit, r.stderr()).to.equal(0)
    const after = JSON.parse(readFileSync(layout(dir).networkJson, 'utf8')) as NetworkDescription
    expect(after.chain).to.deep.equal(before.chain)
    expect(after.members[0]).to.deep.equal(before.members[0])
    expect(after.members[1]!.org).to.equal('org1')
    // The new member follows the plan of the base port the network was created with.
    expect(Number(new URL(after.members[1]!.api).port)).to.equal(Number(new URL(before.members[0]!.api).port) + 2)
    const pids = readPids(layout(dir).pidsJson).processes
    expect(pids.every((p) => isAlive(p.pid))).to.equal(true)

    const down = cli(['down', '--dir', dir])
    expect(await down.exit).to.equal(0)
    expect(down.stdout()).to.contain('stopped 4 processes')
    expect(pids.filter((p) => isAlive(p.pid))).to.deep.equal([])

    const stopped = cli(['kill', 'org1', '--dir', dir])
    expect(await stopped.exit).to.equal(1)
    expect(stopped.stderr()).to.contain(`the network in ${dir} is not running: start it with npm run network:up`)
  })

  it('under a foreground network:up, a member killed and restarted from another terminal is not fatal, and Ctrl-C stops it (and a paused one)', async () => {
    const up = cli(['up', '--dir', dir])
    children.push(up.child)
    await waitFor('the live status', () => /org1\s+up\s+chain ok/.test(up.stdout()), { timeoutMs: 120_000 })
    const before = readPids(layout(dir).pidsJson)
    expect(before.orchestrator).to.equal(up.child.pid)

    const kill = cli(['kill', 'org1', '--dir', dir])
    expect(await kill.exit, kill.stderr()).to.equal(0)
    const restart = cli(['restart', 'org1', '--dir', dir])
    expect(await restart.exit, restart.stderr()).to.equal(0)
    expect(restart.stdout()).to.match(/restarted org1: pid \d+, ready/)
    const after = readPids(layout(dir).pidsJson)
    const oldPid = before.processes.find((p) => p.name === 'node1')!.pid
    const newPid = after.processes.find((p) => p.name === 'node1')!.pid
    expect(newPid).to.not.equal(oldPid)
    expect(after.orchestrator, 'the orchestrator is still the record holder').to.equal(up.child.pid)
    expect(isAlive(up.child.pid!), 'the orchestrator carries on').to.equal(true)
    expect(after.processes.map((p) => p.name)).to.deep.equal(['chain', 'ipfs', 'node0', 'node1'])

    const pause = cli(['pause', 'org0', '--dir', dir])
    expect(await pause.exit, pause.stderr()).to.equal(0)
    await waitFor('the live status to show org0 paused', () => /org0\s+PAUSED/.test(up.stdout()), { timeoutMs: 10_000 })

    up.child.kill('SIGINT')
    expect(await up.exit).to.equal(0)
    expect(after.processes.filter((p) => isAlive(p.pid)), 'the restarted node1 and the paused node0 stopped too').to.deep.equal([])
    expect(readPids(layout(dir).pidsJson)).to.deep.equal({ processes: [] })
  })
})
