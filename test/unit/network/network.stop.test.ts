import { expect } from 'chai'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readPids } from '../../../network/description.js'
import { layout } from '../../../network/layout.js'
import { recordOrchestrator, stopNetwork, stopUntilNoneLeft } from '../../../network/network.js'
import { isAlive } from '../../../network/process.js'
import { IdleProcesses } from '../../support/idle-process.js'

/** Stopping a network by the PIDs its folder records (idle stand-ins here): the order, the count and the record left. */
describe('network/network: stopping a network from its folder', () => {
  const idle = new IdleProcesses()
  let dir: string

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stop-'))
  })

  afterEach(async () => {
    await idle.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  it('stops the network:up that runs it first, then every recorded process still there, last started first', async () => {
    const [orchestrator, chain, node] = [idle.start(), idle.start(), idle.start()]
    const gone = await idle.gone()
    writeFileSync(layout(dir).pidsJson, JSON.stringify({ processes: [{ name: 'chain', pid: chain }, { name: 'node0', pid: node }, { name: 'node1', pid: gone }] }))
    recordOrchestrator(dir, orchestrator)
    expect(readPids(layout(dir).pidsJson).orchestrator).to.equal(orchestrator)
    const logged: string[] = []
    expect(await stopNetwork(dir, (l) => logged.push(l))).to.equal(2)
    expect(logged).to.deep.equal([`stopping the network:up that runs it (pid ${orchestrator})`, `stopping node0 (pid ${node})`, `stopping chain (pid ${chain})`])
    expect([orchestrator, chain, node].map(isAlive)).to.deep.equal([false, false, false])
    expect(readPids(layout(dir).pidsJson)).to.deep.equal({ processes: [] })
  })

  it('leaves alone the orchestrator when it is this process, and forgets it when told', async () => {
    const node = idle.start()
    writeFileSync(layout(dir).pidsJson, JSON.stringify({ orchestrator: process.pid, processes: [{ name: 'node0', pid: node }] }))
    expect(await stopNetwork(dir)).to.equal(1)
    recordOrchestrator(dir, process.pid)
    recordOrchestrator(dir, undefined)
    expect(readPids(layout(dir).pidsJson)).to.deep.equal({ processes: [] })
  })

  it('answers 0 for a folder where nothing ran, and writes no PID file there', async () => {
    expect(await stopNetwork(dir)).to.equal(0)
    expect(existsSync(layout(dir).pidsJson)).to.equal(false)
    await stopUntilNoneLeft(dir)
  })

  it('stops until no recorded process is left', async () => {
    const pids = [idle.start(), idle.start()]
    writeFileSync(layout(dir).pidsJson, JSON.stringify({ processes: pids.map((pid, i) => ({ name: `p${i}`, pid })) }))
    await stopUntilNoneLeft(dir)
    expect(pids.map(isAlive)).to.deep.equal([false, false])
  })
})
