import { expect } from 'chai'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { layout } from '../../network/layout.js'
import { readPids, type NetworkDescription } from '../../network/description.js'
import { assertPortFree, freePort, isAlive, projectRoot, stopPid, tsEntry, waitFor } from '../../network/process.js'
import { stopNetwork } from '../../network/network.js'
import { tempDir } from '../support/network.js'

interface Run {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exit: Promise<number | null>
}

function cli(args: string[]): Run {
  const child = spawn(process.execPath, tsEntry('network/cli.ts', args), { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
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
  })
})
