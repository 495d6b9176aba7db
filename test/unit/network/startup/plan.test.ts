import { expect } from 'chai'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NodeConfigFile } from '../../../../node/config.js'
import type { NetworkDescription } from '../../../../network/description.js'
import { layout } from '../../../../network/layout.js'
import { freeBasePort } from '../../../../network/ports.js'
import { PortBusyError } from '../../../../network/process.js'
import { planNetwork } from '../../../../network/startup/plan.js'
import { IdleProcesses } from '../../../support/idle-process.js'

/** Start-up's first phase: the members and ports decided, and a start refused before anything runs. */
describe('network/startup/plan: what a start will do', () => {
  const idle = new IdleProcesses()
  let dir: string
  let logged: string[]
  const log = (l: string): void => {
    logged.push(l)
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plan-'))
    logged = []
  })

  afterEach(async () => {
    await idle.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  async function refusal(p: Promise<unknown>): Promise<Error> {
    try {
      await p
    } catch (err) {
      return err as Error
    }
    return expect.fail('the plan was not refused')
  }

  function memberConfig(org: string, node: string, ports: { api: number; p2p: number }, admin?: boolean): void {
    const M = layout(dir).member(org)
    mkdirSync(M.dir, { recursive: true })
    const cfg: NodeConfigFile = {
      org,
      node,
      signingKeyFile: 'signing.key',
      chain: { rpc: 'http://127.0.0.1:1', contract: '0x' + '11'.repeat(20), firstBlock: 0 },
      ipfs: { api: 'http://127.0.0.1:2', gateway: 'http://127.0.0.1:3' },
      api: { port: ports.api },
      p2p: { port: ports.p2p, certFile: 'cert.pem', keyFile: 'key.pem' },
      dataDir: 'data',
      ...(admin !== undefined ? { admin } : {}),
    }
    writeFileSync(M.config, JSON.stringify(cfg))
  }

  it('refuses a member count that is not a whole number of at least 1', async () => {
    expect((await refusal(planNetwork({ dir, members: 0 }, log))).message).to.equal('--members must be a whole number of at least 1 (got 0)')
    expect((await refusal(planNetwork({ dir, members: 2.5 }, log))).message).to.equal('--members must be a whole number of at least 1 (got 2.5)')
  })

  it('refuses a folder whose network still runs, naming its PIDs', async () => {
    const pid = idle.start()
    writeFileSync(layout(dir).pidsJson, JSON.stringify({ processes: [{ name: 'chain', pid }, { name: 'node0', pid: await idle.gone() }] }))
    expect((await refusal(planNetwork({ dir }, log))).message).to.equal(`the network in ${dir} is already running (pids ${pid}); stop it with network:down first`)
  })

  it('plans three members on the ports of a base port for a new folder, on sql.js, and makes its logs folder', async () => {
    const base = await freeBasePort(3)
    const plan = await planNetwork({ dir, basePort: base }, log)
    expect(plan.ports).to.deep.equal({ chain: base, ipfsApi: base + 1, ipfsGateway: base + 2 })
    expect(plan.members).to.deep.equal([
      { org: 'org0', node: 'node0', ports: { api: base + 10, p2p: base + 11 } },
      { org: 'org1', node: 'node1', ports: { api: base + 12, p2p: base + 13 } },
      { org: 'org2', node: 'node2', ports: { api: base + 14, p2p: base + 15 } },
    ])
    expect(plan.database).to.deep.equal({ engine: 'sqljs' })
    expect(plan.previous).to.equal(undefined)
    expect(plan.timeout).to.equal(60_000)
    expect(existsSync(layout(dir).logs)).to.equal(true)
  })

  it('resumes a folder on its ports and members in their order, turning the admin routes on where a config does not say', async () => {
    // Free through base+41, the last port a member below uses.
    const base = await freeBasePort(16)
    memberConfig('org10', 'node10', { api: base + 30, p2p: base + 31 })
    memberConfig('org2', 'node2', { api: base + 14, p2p: base + 15 }, false)
    memberConfig('acme', 'n-acme', { api: base + 40, p2p: base + 41 })
    const previous: NetworkDescription = {
      chain: { rpc: `http://127.0.0.1:${base}`, chainId: 1337, contract: '0x0', firstBlock: 0 },
      ipfs: { api: `http://127.0.0.1:${base + 1}`, gateway: `http://127.0.0.1:${base + 2}` },
      members: [{ org: 'org2', node: 'node2', did: 'd', api: `http://127.0.0.1:${base + 10}`, ws: '', p2p: '', key: '' }],
    }
    writeFileSync(layout(dir).networkJson, JSON.stringify(previous))
    const plan = await planNetwork({ dir, basePort: base + 100, members: 4, readyTimeoutMs: 5000 }, log)
    expect(logged).to.deep.equal([`resuming the network in ${dir} on the ports it was created with`])
    expect(plan.ports).to.deep.equal({ chain: base, ipfsApi: base + 1, ipfsGateway: base + 2 })
    expect(plan.members.map((m) => [m.org, m.ports.api])).to.deep.equal([
      ['org2', base + 14],
      ['org10', base + 30],
      ['acme', base + 40],
      ['org3', base + 16],
    ])
    expect(plan.timeout).to.equal(5000)
    const admin = (org: string): unknown => (JSON.parse(readFileSync(layout(dir).member(org).config, 'utf8')) as NodeConfigFile).admin
    expect([admin('org2'), admin('org10'), admin('acme')]).to.deep.equal([false, true, true])
  })

  it('names a busy port before anything starts', async () => {
    const base = await freeBasePort(1)
    const busy: Server = createServer().listen(base + 11, '127.0.0.1')
    await new Promise((resolve) => busy.once('listening', resolve))
    try {
      const err = await refusal(planNetwork({ dir, basePort: base, members: 1 }, log))
      expect(err).to.be.instanceOf(PortBusyError)
      expect(err.message).to.equal(`port ${base + 11} (org0 p2p) is already in use on 127.0.0.1`)
    } finally {
      await new Promise((resolve) => busy.close(resolve))
    }
  })
})
