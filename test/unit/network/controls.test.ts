import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ControlError, NetworkControls, describeControls, ruleText, NO_CONTROLS } from '../../../network/controls.js'
import type { NetworkDescription } from '../../../network/description.js'
import { layout } from '../../../network/layout.js'
import { isAlive, isPaused } from '../../../network/process.js'
import { IdleProcesses } from '../../support/idle-process.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedEndpoint } from '../../support/scripted-server.js'

const TOKEN = 'a'.repeat(64)

function description(api: string, rpc: string, database?: NetworkDescription['database']): NetworkDescription {
  const member = (n: number) => ({ org: `org${n}`, node: `node${n}`, did: `did:firefly:org/org${n}`, api, ws: `${api}/ws`, p2p: 'https://127.0.0.1:1', key: `0x${n}` })
  return {
    chain: { rpc, chainId: 1337, contract: '0x0', firstBlock: 0 },
    ipfs: { api: 'http://127.0.0.1:1', gateway: 'http://127.0.0.1:2' },
    ...(database ? { database } : {}),
    members: [member(1), member(2), member(3)],
  }
}

/** Throws unless `p` rejects with a ControlError whose message matches. */
async function refused(p: Promise<unknown> | (() => unknown), message: RegExp): Promise<void> {
  try {
    await (typeof p === 'function' ? p() : p)
  } catch (err) {
    expect(err).to.be.instanceOf(ControlError)
    expect((err as Error).message).to.match(message)
    return
  }
  expect.fail(`expected a ControlError matching ${message}`)
}

describe('network/controls: a network\'s controls from its state folder', () => {
  const idle = new IdleProcesses()
  let dir: string
  let member: ScriptedEndpoint
  let chain: ScriptedEndpoint
  /** PIDs standing in for the network's processes: node1 and the chain run, node2 has gone, node3 is not recorded. */
  let pids: { chain: number; node1: number; node2: number }

  before(async () => {
    member = await scriptedEndpoint()
    chain = await scriptedEndpoint()
  })

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'controls-'))
    writeFileSync(join(dir, 'network.json'), JSON.stringify(description(member.url, chain.url)))
    pids = { chain: idle.start(), node1: idle.start(), node2: await idle.gone() }
    writePids({ chain: pids.chain, node1: pids.node1, node2: pids.node2 })
    member.requests.length = 0
    chain.requests.length = 0
  })

  afterEach(async () => {
    await idle.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  after(async () => {
    await member.close()
    await chain.close()
  })

  function writePids(byName: Record<string, number>): void {
    writeFileSync(join(dir, 'pids.json'), JSON.stringify({ processes: Object.entries(byName).map(([name, pid]) => ({ name, pid })) }))
  }

  describe('naming', () => {
    it('refuses a folder without network.json, saying how to start one', () => {
      const empty = mkdtempSync(join(tmpdir(), 'controls-empty-'))
      try {
        expect(() => new NetworkControls(empty)).to.throw(ControlError, /no network in .* \(no network\.json\): start one with npm run network:up -- --dir /)
      } finally {
        rmSync(empty, { recursive: true })
      }
    })

    it('finds a member by org, node or org/node, and lists the orgs for an unknown name', () => {
      const c = new NetworkControls(dir)
      expect(c.member('org2').node).to.equal('node2')
      expect(c.member('node3').org).to.equal('org3')
      expect(c.member('org1/node1').org).to.equal('org1')
      expect(() => c.member('org1/node2')).to.throw(ControlError, 'unknown member "org1/node2": the network in')
      expect(() => c.member('org9')).to.throw(ControlError, /has org1, org2, org3$/)
    })

    it('names postgres a process only when the network runs a server of its own', () => {
      const onSqljs = new NetworkControls(dir)
      expect(() => onSqljs.processName('postgres')).to.throw(ControlError, /runs no PostgreSQL of its own \(its members are on sql\.js\)/)
      const shared = new NetworkControls(dir, { description: description(member.url, chain.url, { engine: 'postgres', managed: false, server: 'db.example:5432' }) })
      expect(() => shared.processName('postgres')).to.throw(ControlError, /\(its members use db\.example:5432\)/)
      const own = new NetworkControls(dir, { description: description(member.url, chain.url, { engine: 'postgres', managed: true, server: '127.0.0.1:5999' }) })
      expect(own.processName('postgres')).to.deep.equal({ process: 'postgres' })
      expect(own.processName('ipfs')).to.deep.equal({ process: 'ipfs' })
      expect(own.processName('org2').process).to.equal('node2')
    })
  })

  describe('processes', () => {
    it('reports each recorded process running, paused or down, a node with its org', async () => {
      const c = new NetworkControls(dir)
      await c.pause('chain')
      const states = c.processes().map((p) => [p.name, p.org ?? null, p.state])
      expect(states).to.deep.equal([
        ['chain', null, 'paused'],
        ['node1', 'org1', 'running'],
        ['node2', 'org2', 'down'],
      ])
      expect(c.unavailableMembers()).to.deep.equal({ org2: 'org2 is not running', org3: 'org3 is not running' })
      await c.resume('chain')
      expect(isPaused(pids.chain)).to.equal(false)
    })

    it('names a paused member unavailable and refuses its admin controls until it is resumed', async () => {
      const c = new NetworkControls(dir)
      await c.pause('org1')
      expect(c.unavailableMembers().org1).to.equal('org1 is paused')
      await refused(c.controlsOf('org1'), /^org1 is paused: resume it first \(.* resume org1\)$/)
      expect(member.requests).to.have.length(0)
      await c.resume('node1')
      expect(c.processes()[1]!.state).to.equal('running')
    })

    it('tells a process that has gone from one never recorded, and a network with nothing running', async () => {
      const c = new NetworkControls(dir)
      await refused(c.pause('org2'), new RegExp(`^org2 is not running \\(pid ${pids.node2} has gone\\): start it again with .* restart org2$`))
      await refused(c.kill('org3'), /^org3 is not running: start it again/)
      writePids({ node2: pids.node2 })
      await refused(c.pause('org2'), /^the network in .* is not running: start it with npm run network:up -- --dir/)
      expect(() => c.rogue('org1')).to.throw(ControlError, /is not running/)
    })

    it('refuses as a rejected promise, never a throw, so that a caller\'s .catch sees every refusal', async () => {
      const c = new NetworkControls(dir)
      const calls: (() => Promise<unknown>)[] = [
        () => c.hold({ from: 'org1', to: 'org1' }),
        () => c.release({ from: 'org9', to: 'org1' }),
        () => c.drop({ from: 'org1', to: 'org2', message: 'm', batch: 'b' }),
        () => c.holdReading('org1', 'disk' as 'chain'),
        () => c.releaseReading('org9', 'chain'),
        () => c.controlsOf('org9'),
      ]
      const outcomes = await Promise.allSettled(calls.map((call) => call()))
      writePids({ node2: pids.node2 })
      outcomes.push(...(await Promise.allSettled([c.trace('m1'), c.verify()])))
      expect(outcomes.map((o) => o.status === 'rejected' && o.reason instanceof ControlError)).to.deep.equal(new Array(8).fill(true))
      expect(member.requests).to.have.length(0)
    })

    it('kills with SIGKILL by default, and ends a paused process with SIGTERM by letting it run', async () => {
      const c = new NetworkControls(dir)
      await c.kill('org1')
      expect(isAlive(pids.node1)).to.equal(false)
      await c.pause('chain')
      await c.kill('chain', 'SIGTERM')
      expect(isAlive(pids.chain)).to.equal(false)
      expect(c.processes().map((p) => p.state)).to.deep.equal(['down', 'down', 'down'])
    })

    it('sends a signal that does not end the process without waiting for it to go', async () => {
      const c = new NetworkControls(dir)
      await c.kill('chain', 'SIGCONT')
      expect(isAlive(pids.chain)).to.equal(true)
    })

    it('restarts nothing into a network none of whose other processes runs', async () => {
      writePids({ node1: pids.node1, node2: pids.node2 })
      await refused(new NetworkControls(dir).restart('org1'), /^the network in .* is not running/)
      expect(isAlive(pids.node1)).to.equal(true)
    })

    it('refuses to restart the network\'s PostgreSQL when database.json names no server of its own', async () => {
      const c = new NetworkControls(dir, { description: description(member.url, chain.url, { engine: 'postgres', managed: true, server: '127.0.0.1:5999' }) })
      await refused(c.restart('postgres'), /database\.json names no PostgreSQL server of the network's own$/)
    })
  })

  describe('a member\'s controls over its admin API', () => {
    const controls = { exchange: { held: [{ to: 'org2' }], dropped: [] }, chain: { held: false }, ipfs: { held: false } }

    it('posts a hold of one message with the member\'s admin token, and answers what the member holds', async () => {
      const M = layout(dir).member('org1')
      mkdirSync(M.dir, { recursive: true })
      writeFileSync(M.config, JSON.stringify({ dataDir: './elsewhere' }))
      mkdirSync(join(M.dir, 'elsewhere'))
      writeFileSync(join(M.dir, 'elsewhere', 'admin-token'), TOKEN)
      member.answer(() => ({ status: 200, body: controls }))
      const c = new NetworkControls(dir)
      expect(await c.hold({ from: 'org1', to: 'node2', message: 'm1' })).to.deep.equal(controls)
      await c.drop({ from: 'org1', to: 'org2', batch: 'b1' })
      await c.release({ from: 'org1', to: 'org2' })
      expect(member.requests.map((r) => [r.method, r.path, r.body])).to.deep.equal([
        ['POST', '/admin/v1/exchange/hold', { to: 'org2', message: 'm1' }],
        ['POST', '/admin/v1/exchange/drop', { to: 'org2', batch: 'b1' }],
        ['POST', '/admin/v1/exchange/release', { to: 'org2' }],
      ])
      expect(member.requests[0]!.headers.authorization).to.equal(`Bearer ${TOKEN}`)
    })

    it('refuses a selector from a member to itself or naming both a message and a batch, asking nothing', async () => {
      const c = new NetworkControls(dir)
      await refused(() => c.hold({ from: 'org1', to: 'node1' }), /^hold: from and to are the same member \(org1\)$/)
      await refused(() => c.drop({ from: 'org1', to: 'org2', message: 'm', batch: 'b' }), /^drop: name a message or a batch, not both$/)
      expect(member.requests).to.have.length(0)
    })

    it('holds and releases a member\'s reading of the chain or IPFS, and nothing else', async () => {
      member.answer(() => ({ status: 200, body: controls }))
      const c = new NetworkControls(dir)
      await c.holdReading('org1', 'ipfs')
      await c.releaseReading('org1', 'chain')
      await refused(() => c.holdReading('org1', 'disk' as 'chain'), /^what a member reads is chain or ipfs \(got "disk"\)$/)
      expect(member.requests.map((r) => r.path)).to.deep.equal(['/admin/v1/ipfs/hold', '/admin/v1/chain/release'])
      expect(member.requests[0]!.headers.authorization).to.equal(undefined)
    })

    it('says a member without the admin API lacks "admin": true, and passes on any other refusal', async () => {
      const c = new NetworkControls(dir)
      member.answer(() => ({ status: 404, body: { error: 'No route for GET /admin/v1/controls' } }))
      await refused(c.controlsOf('org1'), /^org1 does not serve the admin API \(\/admin\/v1\/controls is 404\): its config .*config\.json lacks "admin": true/)
      member.answer(() => ({ status: 404, body: { error: 'unknown message m9' } }))
      await refused(c.hold({ from: 'org1', to: 'org2', message: 'm9' }), /^org1 refused POST \/admin\/v1\/exchange\/hold: 404 unknown message m9$/)
      member.answer(() => ({ status: 500, body: 'disk on fire' }))
      await refused(c.controlsOf('org1'), /^org1 refused GET \/admin\/v1\/controls: 500 disk on fire$/)
    })

    it('turns a member that refuses the connection into a ControlError naming it', async () => {
      const gone = await scriptedEndpoint()
      await gone.close()
      const c = new NetworkControls(dir, { description: description(gone.url, chain.url) })
      await refused(c.controlsOf('org1'), /^org1 is not running \(connection refused at http:\/\/127\.0\.0\.1:\d+\)$/)
    })
  })

  describe('the chain\'s mining', () => {
    function chainWith(pending: number | 'fails'): void {
      chain.answer((r) => {
        const m = rpcMethod(r)
        if (m === 'eth_getBlockTransactionCountByNumber') return pending === 'fails' ? { status: 200, body: { jsonrpc: '2.0', id: 1, error: { message: 'no pending block' } } } : rpcResult(r, `0x${pending.toString(16)}`)
        if (m === 'eth_blockNumber') return rpcResult(r, '0x2a')
        if (m === 'hardhat_getAutomine') return rpcResult(r, true)
        return rpcResult(r, true)
      })
    }
    const methods = (): string[] => chain.requests.map(rpcMethod)

    it('turning automine on mines what waits in the pool, and only then', async () => {
      const c = new NetworkControls(dir)
      chainWith(2)
      await c.mining(true)
      expect(methods()).to.deep.equal(['evm_setAutomine', 'eth_getBlockTransactionCountByNumber', 'evm_mine'])
      chain.requests.length = 0
      chainWith(0)
      await c.mining(true)
      expect(methods()).to.deep.equal(['evm_setAutomine', 'eth_getBlockTransactionCountByNumber'])
      chain.requests.length = 0
      await c.mining(false)
      expect(methods()).to.deep.equal(['evm_setAutomine'])
      expect(chain.requests[0]!.body).to.deep.include({ params: [false] })
    })

    it('mines anyway when the chain cannot say what is pending', async () => {
      chainWith('fails')
      await new NetworkControls(dir).mining(true)
      expect(methods()).to.deep.equal(['evm_setAutomine', 'eth_getBlockTransactionCountByNumber', 'evm_mine'])
    })

    it('mines n blocks and answers the head; refuses a count that is not a whole number of at least 1', async () => {
      chainWith(0)
      const c = new NetworkControls(dir)
      expect(await c.mine(2)).to.equal(42)
      expect(methods()).to.deep.equal(['evm_mine', 'evm_mine', 'eth_blockNumber'])
      expect(await c.isMining()).to.equal(true)
      await refused(c.mine(0), /^mine: the number of blocks must be a whole number of at least 1 \(got 0\)$/)
      await refused(c.mine(1.5), /\(got 1\.5\)$/)
    })

    it('names the chain in its errors: one it reports, and a status that is no answer', async () => {
      const c = new NetworkControls(dir)
      chain.answer(() => ({ status: 200, body: { jsonrpc: '2.0', id: 1, error: { message: 'method not found' } } }))
      await refused(c.mine(), new RegExp(`^the chain \\(${chain.url}\\): evm_mine: method not found$`))
      chain.answer(() => ({ status: 503, body: 'starting' }))
      await refused(c.isMining(), new RegExp(`^the chain \\(${chain.url}\\) did not answer hardhat_getAutomine$`))
    })

    it('asks nothing of a chain that is not running', async () => {
      writePids({ node1: pids.node1 })
      await refused(new NetworkControls(dir).mine(), /^chain is not running: start it again/)
      expect(chain.requests).to.have.length(0)
    })
  })
})

describe('network/controls: a member\'s controls in words', () => {
  it('names every rule, its message or batch, and a held reading', () => {
    expect(
      describeControls({
        exchange: { held: [{ to: 'org2' }, { to: 'org3', message: 'm1' }], dropped: [{ to: 'org2', batch: 'b1' }, { to: 'org3', message: 'm2', batch: 'b2' }] },
        chain: { held: true },
        ipfs: { held: true },
      }),
    ).to.equal(
      'holds deliveries to org2; holds deliveries to org3 of message m1; dropped deliveries to org2 of batch b1; ' +
        'dropped deliveries to org3 of message m2 (batch b2); not reading the chain; not reading IPFS',
    )
    expect(describeControls({ exchange: { held: [], dropped: [] }, chain: { held: false }, ipfs: { held: false } })).to.equal(NO_CONTROLS)
    expect(ruleText({})).to.equal('')
  })
})
