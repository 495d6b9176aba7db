import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runVerb, type VerbIo } from '../../../network/cli-verbs.js'
import type { NetworkDescription } from '../../../network/description.js'
import { isAlive, isPaused } from '../../../network/process.js'
import { IdleProcesses } from '../../support/idle-process.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedRequest } from '../../support/scripted-server.js'
import { ScriptedNetwork } from '../../support/scripted-network.js'

/** `npm run network -- <verb>` run on a state folder whose processes are idle stand-ins and whose members are scripted. */
class UsageShown extends Error {}

describe('npm run network -- <verb>: what each verb prints and exits with', () => {
  const idle = new IdleProcesses()
  let net: ScriptedNetwork
  let dir: string
  let pids: { chain: number; node0: number; node1: number }
  let out: string[]
  let err: string[]
  let usage: (string | undefined)[]
  const io = (): VerbIo => ({
    defaultDir: dir,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    usage: (problem) => {
      usage.push(problem)
      throw new UsageShown(problem)
    },
  })
  const run = (verb: string, ...args: string[]): Promise<number> => runVerb(verb, [...args, '--dir', dir], io())
  const controls = (held: { to: string }[] = []) => ({ exchange: { held, dropped: [] }, chain: { held: false }, ipfs: { held: false } })

  function writeNetwork(d: NetworkDescription): void {
    writeFileSync(join(dir, 'network.json'), JSON.stringify(d))
  }

  function chainAnswers(automine: boolean, pending: number): void {
    net.chain.answer((r: ScriptedRequest) => {
      const m = rpcMethod(r)
      if (m === 'hardhat_getAutomine') return rpcResult(r, automine)
      if (m === 'eth_getBlockTransactionCountByNumber') return rpcResult(r, `0x${pending.toString(16)}`)
      if (m === 'eth_blockNumber') return rpcResult(r, '0x7')
      return rpcResult(r, true)
    })
  }

  before(async () => {
    net = await ScriptedNetwork.start(['org0', 'org1'])
  })

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'verbs-'))
    writeNetwork(net.description)
    pids = { chain: idle.start(), node0: idle.start(), node1: idle.start() }
    writeFileSync(join(dir, 'pids.json'), JSON.stringify({ processes: Object.entries(pids).map(([name, pid]) => ({ name, pid })) }))
    out = []
    err = []
    usage = []
    for (const s of net.servers.values()) s.requests.length = 0
    net.chain.requests.length = 0
  })

  afterEach(async () => {
    await idle.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  after(() => net.close())

  it('status: every process, the database, the mining switch with what waits, and each member\'s controls or why they are unknown', async () => {
    chainAnswers(false, 1)
    net.routes('org0', { '/admin/v1/controls': controls([{ to: 'org1' }]) })
    net.routes('org1', { '/admin/v1/controls': () => ({ status: 500, body: { error: 'closing' } }) })
    expect(await run('status')).to.equal(0)
    expect(out).to.deep.equal([
      `chain          running  pid ${pids.chain}`,
      `org0/node0     running  pid ${pids.node0}`,
      `org1/node1     running  pid ${pids.node1}`,
      'database       sql.js: each member in memory, journaled to its data folder',
      'chain mining off (1 transaction waiting)',
      'org0           holds deliveries to org1',
      'org1           controls unknown: org1 refused GET /admin/v1/controls: 500 closing',
    ])
  })

  it('status: names each member\'s PostgreSQL database, and leaves out the mining of a chain that does not answer', async () => {
    net.chain.answer(() => ({ status: 503, body: 'starting' }))
    net.routes('org0', { '/admin/v1/controls': controls() })
    net.routes('org1', { '/admin/v1/controls': controls() })
    const members = net.description.members.map((m, i) => (i === 0 ? { ...m, database: 'postgres://parley@127.0.0.1:5999/org0_db' } : m))
    writeNetwork({ ...net.description, members, database: { engine: 'postgres', managed: true, server: '127.0.0.1:5999' } })
    expect(await run('status')).to.equal(0)
    expect(out).to.include("database       PostgreSQL on 127.0.0.1:5999 (the network's own, process postgres): org0 org0_db, org1")
    expect(out.filter((l) => l.startsWith('chain mining'))).to.deep.equal([])
    expect(out.slice(-2)).to.deep.equal(['org0           no controls in force', 'org1           no controls in force'])
  })

  it('pause, resume and kill act on the process and say so; a signal that does not end it is only sent', async () => {
    expect(await run('pause', 'org1')).to.equal(0)
    expect(isPaused(pids.node1)).to.equal(true)
    expect(await run('resume', 'org1')).to.equal(0)
    expect(await run('kill', 'chain', '--signal', 'usr1')).to.equal(0)
    expect(await run('kill', 'org0', '--signal', 'term')).to.equal(0)
    expect(isAlive(pids.node0)).to.equal(false)
    expect(out).to.deep.equal([
      'paused org1: it answers nothing and does nothing until: npm run network -- resume org1',
      'resumed org1',
      'sent SIGUSR1 to chain',
      'sent SIGTERM to org0; it has exited',
    ])
  })

  it('hold, release and drop say what the member does now', async () => {
    net.routes('org0', {
      '/admin/v1/chain/hold': { ...controls(), chain: { held: true } },
      '/admin/v1/ipfs/release': controls(),
      '/admin/v1/exchange/hold': controls([{ to: 'org1' }]),
      '/admin/v1/exchange/release': controls(),
      '/admin/v1/exchange/drop': (r: ScriptedRequest) => ({ status: 200, body: { dropped: (r.body as { batch?: string }).batch ? [{ to: 'org1', batch: 'b1' }] : [] } }),
    })
    for (const args of [['hold', 'org0', 'chain'], ['release', 'node0', 'ipfs'], ['hold', 'org0', 'org1'], ['release', 'org0', 'org1', '--message', 'm1'], ['drop', 'org0', 'org1', '--message', 'm1'], ['drop', 'org0', 'org1'], ['drop', 'org0', 'org1', '--batch', 'b1']]) {
      expect(await run(args[0]!, ...args.slice(1))).to.equal(0)
    }
    expect(out).to.deep.equal([
      "org0 no longer reads the chain's pins (it falls behind)",
      'org0: not reading the chain',
      'org0 reads IPFS',
      'org0: no controls in force',
      'org0 holds its private deliveries to org1',
      'org0: holds deliveries to org1',
      'org0 released its private deliveries of message m1 to org1',
      'org0: no controls in force',
      'org0 had no delivery of message m1 to org1 to drop; one queued later for it will be dropped',
      'org0 had no delivery to org1 to drop',
      'org0 dropped its deliveries to org1 of batch b1 (never sent while org0 runs; a restart of org0 sends them)',
    ])
  })

  it('mining and mine switch and mine the chain, naming the new head', async () => {
    chainAnswers(true, 0)
    expect(await run('mining', 'off')).to.equal(0)
    expect(await run('mining', 'on')).to.equal(0)
    expect(await run('mine', '2')).to.equal(0)
    expect(await run('mine')).to.equal(0)
    expect(out).to.deep.equal([
      'the chain no longer mines: transactions wait until npm run network -- mine',
      'the chain mines every transaction as it comes again',
      'mined 2 blocks; the head is block 7',
      'mined 1 block; the head is block 7',
    ])
  })

  it('a refusal of the controls or of a trace is one line on stderr and exit 1', async () => {
    net.routes('org0', { '/api/v1/namespaces/ns1/messages/m1/trace': () => ({ status: 404, body: { error: 'not found' } }) })
    net.routes('org1', { '/api/v1/namespaces/ns1/messages/m1/trace': () => ({ status: 404, body: { error: 'not found' } }) })
    expect(await run('trace', 'm1', '--namespace', 'ns1')).to.equal(1)
    expect(await run('pause', 'org7')).to.equal(1)
    expect(err).to.deep.equal(['network trace: no member knows message m1 in namespace ns1', `network pause: unknown member "org7": the network in ${dir} has org0, org1`])
    expect(out).to.deep.equal([])
  })

  it('verify prints its report, as JSON when asked, and exits 1 when members differ', async () => {
    const routes = {
      '/api/v1/namespaces/default/batches': [],
      '/api/v1/namespaces/svc_system/batches': [],
      '/api/v1/namespaces/default/events': [],
      '/api/v1/namespaces/svc_system/events': [],
      '/api/v1/namespaces/default/messages': [],
      '/api/v1/namespaces/svc_system/messages': [],
    }
    chainAnswers(true, 0)
    net.chain.answer((r) => (rpcMethod(r) === 'eth_blockNumber' ? rpcResult(r, '0x0') : rpcResult(r, [])))
    net.routes('org0', routes)
    net.routes('org1', routes)
    expect(await run('verify', '--json')).to.equal(0)
    expect(JSON.parse(out.join('\n'))).to.deep.include({ ok: true, members: ['org0', 'org1'], differences: [] })
    out.length = 0
    await run('pause', 'org1')
    out.length = 0
    expect(await run('verify')).to.equal(1)
    expect(out.join('\n')).to.match(/DIFFERS: 1 difference\n {2}unreachable org1 could not be read: org1 is paused$/)
  })

  it('verify --members names a member whose status cannot be read, with no state folder needed', async () => {
    const closed = await scriptedEndpoint()
    await closed.close()
    expect(await runVerb('verify', ['--members', closed.url], io())).to.equal(1)
    expect(err).to.deep.equal([`network verify: ${closed.url} is not running (connection refused at ${closed.url})`])
  })

  it('shows the usage for a mistake or --help, and refuses a folder with no network', async () => {
    try {
      await run('pause')
      expect.fail('no usage shown')
    } catch (e) {
      expect(e).to.be.instanceOf(UsageShown)
    }
    try {
      await run('status', '--help')
      expect.fail('no usage shown')
    } catch (e) {
      expect(e).to.be.instanceOf(UsageShown)
    }
    expect(usage).to.deep.equal(['pause takes one member (org1, org1/node1), chain or ipfs', undefined])
    rmSync(join(dir, 'network.json'))
    expect(await run('status')).to.equal(1)
    expect(err[0]).to.match(/^network status: no network in .* \(no network\.json\)/)
  })
})
