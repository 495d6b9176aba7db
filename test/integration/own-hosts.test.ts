import { expect } from 'chai'
import { X509Certificate } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EntryName } from '../../network/build.js'
import { freePort, spawnLogged, stopPid, waitFor, type SpawnedProcess } from '../../network/process.js'
import { answersOk, rpcCall, tailLog } from '../../network/probe.js'
import { seesEveryMember } from '../../network/readiness.js'
import { parseChainVerb, runChainVerb } from '../../network/hosts/chain-verbs.js'
import { initMember, parseInitArgs } from '../../network/hosts/member-init.js'
import { describeMembers } from '../../network/hosts/describe.js'
import { runVerb } from '../../network/cli-verbs.js'
import type { MemberDescription } from '../../network/description.js'
import { adminTokenPath, readToken } from '../../node/admin/token.js'
import { programArgs } from '../support/programs.js'
import { testDatabase } from '../support/postgres.js'
import { confirmationOrder, get, messageReaching, nsBase, request, runId, waitConfirmedAll, type ApiMessage } from '../support/api.js'

/**
 * A network assembled piece by piece, as on separate hosts: the chain and IPFS each from its own config file, BatchPin
 * deployed and the members funded by `npm run chain -- deploy|fund`, then three members each initialised by
 * `npm run node -- init` for its own loopback address (127.0.0.2-4 stand in for hosts) and started from its own
 * config, each on a PostgreSQL database of its own. They share no folder: each registers itself on chain and finds
 * the others' p2p endpoints there.
 */
describe('members on their own hosts, started one by one from their own configs', function () {
  this.timeout(180_000)
  const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4']
  // The chain and IPFS on hosts of their own too: nothing of them is reached at 127.0.0.1.
  const CHAIN_HOST = '127.0.0.10'
  const IPFS_HOST = '127.0.0.11'
  const run = runId()
  const ns = `hosts-${run}`
  const dir = mkdtempSync(join(tmpdir(), 'parley-own-hosts-'))
  const procs: SpawnedProcess[] = []
  let rpc: string
  let members: MemberDescription[] = []
  const memberDirs: string[] = []
  const databases: { drop(): Promise<void> }[] = []

  const start = async (name: string, program: EntryName, config: string): Promise<SpawnedProcess> => {
    const p = spawnLogged({ name, command: process.execPath, args: await programArgs(program, ['--config', config]), logFile: join(dir, `${name}.log`) })
    procs.push(p)
    return p
  }
  const ready = async (p: SpawnedProcess, check: () => Promise<boolean>): Promise<void> => {
    let exited: number | null | undefined
    void p.exited.then((c) => (exited = c))
    await waitFor(`${p.name} to be ready`, async () => {
      if (exited !== undefined) throw new Error(`${p.name} exited (${exited}):\n${tailLog(p.logFile, 15)}`)
      return check()
    }, { timeoutMs: 60_000, intervalMs: 100 })
  }
  const writeJson = (file: string, value: unknown): string => {
    mkdirSync(join(file, '..'), { recursive: true })
    writeFileSync(file, JSON.stringify(value))
    return file
  }

  before(async () => {
    const [chainPort, ipfsApi, ipfsGateway] = [await freePort(), await freePort(), await freePort()]
    rpc = `http://${CHAIN_HOST}:${chainPort}`
    const chain = await start('chain', 'chain', writeJson(join(dir, 'chain', 'chain.json'), { host: CHAIN_HOST, port: chainPort, dir: 'data' }))
    const ipfs = await start('ipfs', 'ipfs', writeJson(join(dir, 'ipfs', 'ipfs.json'), { host: IPFS_HOST, apiPort: ipfsApi, gatewayPort: ipfsGateway, dir: 'data' }))
    await ready(chain, async () => (await rpcCall<string>(rpc, 'eth_chainId', [])) !== undefined)

    const out: string[] = []
    const deploy = parseChainVerb('deploy', ['--rpc', rpc])
    if (typeof deploy === 'string') throw new Error(deploy)
    await runChainVerb(deploy, (l) => out.push(l))
    const deployed = JSON.parse(out.join('\n')) as { contract: string; firstBlock: number; chainId: number }

    const addresses: string[] = []
    for (const [i, host] of HOSTS.entries()) {
      const db = await testDatabase({ prefix: 'hosts' })
      databases.push(db)
      const opts = parseInitArgs([
        '--database-url', db.url,
        '--config', join(dir, `member${i}`, 'member.json'), '--org', `hostorg${i}`, '--host', host,
        '--api-port', String(await freePort()), '--p2p-port', String(await freePort()),
        '--chain', rpc, '--contract', deployed.contract, '--first-block', String(deployed.firstBlock),
        '--ipfs', `http://${IPFS_HOST}:${ipfsApi}`, '--ipfs-gateway', `http://${IPFS_HOST}:${ipfsGateway}`, '--admin',
      ])
      if (typeof opts === 'string') throw new Error(opts)
      const m = await initMember(opts)
      addresses.push(m.address)
      memberDirs.push(join(dir, `member${i}`))
    }
    const fund = parseChainVerb('fund', ['--rpc', rpc, '--to', addresses.join(',')])
    if (typeof fund === 'string') throw new Error(fund)
    await runChainVerb(fund, () => {})
    await ready(ipfs, () => answersOk(`http://${IPFS_HOST}:${ipfsApi}/api/v0/version`, 2000, 'POST'))

    const nodes = await Promise.all(memberDirs.map((d, i) => start(`member${i}`, 'node', join(d, 'member.json'))))
    const apis = memberDirs.map((d) => {
      const cfg = JSON.parse(readFileSync(join(d, 'member.json'), 'utf8')) as { api: { host: string; port: number } }
      return `http://${cfg.api.host}:${cfg.api.port}`
    })
    for (const [i, p] of nodes.entries()) await ready(p, () => answersOk(`${apis[i]}/api/v1/status`, 2000))
    members = (await describeMembers(apis)).members
    for (const m of members) await waitFor(`${m.org} to see every member`, () => seesEveryMember(m.api, members), { timeoutMs: 60_000, intervalMs: 200 })
  })

  after(async () => {
    for (const p of [...procs].reverse()) await stopPid(p.pid)
    for (const db of databases) await db.drop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('each member serves on its own address, on its own database; its certificate names it; the others know its endpoint from the chain', async () => {
    for (const [i, m] of members.entries()) {
      const status = await get<{ database: { engine: string; healthy: boolean } }>(`${m.api}/api/v1/status`)
      expect(status.body.database, m.org).to.deep.include({ engine: 'postgres', healthy: true })
      expect(new URL(m.api).hostname).to.equal(HOSTS[i])
      expect(m.p2p).to.match(new RegExp(`^https://${HOSTS[i]!.replace(/\./g, '\\.')}:\\d+$`))
      const cert = readFileSync(join(memberDirs[i]!, 'tls', 'cert.pem'), 'utf8')
      expect(new X509Certificate(cert).subjectAltName).to.equal(`IP Address:${HOSTS[i]}`)
      for (const other of members.filter((o) => o !== m)) {
        const nodes = await get<{ name: string; profile: { endpoint: string; cert: string } }[]>(`${other.api}/api/v1/network/nodes`)
        const seen = nodes.body.find((n) => n.name === m.node)
        expect(seen?.profile.endpoint, `${other.org} sees ${m.org}'s endpoint`).to.equal(m.p2p)
        expect(seen?.profile.cert).to.equal(cert)
      }
    }
  })

  it('a broadcast is confirmed on every member', async () => {
    const r = await request<ApiMessage>('POST', `${nsBase(members[0]!, ns)}/messages/broadcast`, { header: { topics: [`b-${run}`] }, data: [{ value: 'to all' }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    for (const m of members) await waitConfirmedAll(m, ns, [r.body.header.id])
  })

  const T = `t-${run}`
  const U = `u-${run}`
  const sendPrivate = async (topic: string, value: string): Promise<string> => {
    const [a, b] = members
    const r = await request<ApiMessage>('POST', `${nsBase(a!, ns)}/messages/private`, { header: { topics: [topic] }, group: { members: [{ identity: b!.org }] }, data: [{ value }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    return r.body.header.id
  }
  const admin = (verb: 'hold' | 'release', body: unknown) =>
    request(`POST`, `${members[0]!.api}/admin/v1/exchange/${verb}`, body, { authorization: `Bearer ${readToken(adminTokenPath(join(memberDirs[0]!, 'data')))}` })

  it('a private message reaches its group over mutual TLS between the hosts, and no one else', async () => {
    const id = await sendPrivate(`g-${run}`, 'group')
    await waitConfirmedAll(members[1]!, ns, [id])
    expect((await get(`${nsBase(members[2]!, ns)}/messages/${id}`)).status).to.equal(404)
  })

  it('one message held blocks a later one on its topic (not another topic) until it arrives; verify passes', async () => {
    const [a, b] = members
    const m1 = await sendPrivate(T, 'm1')
    expect((await admin('hold', { to: b!.org, message: m1 })).status).to.equal(200)
    // What is sent next goes in a later batch than m1's: a hold names a delivery, and a delivery is a batch.
    await waitFor('m1 to be sealed into a batch', async () => (await get<ApiMessage>(`${nsBase(a!, ns)}/messages/${m1}`)).body.batch !== undefined, { timeoutMs: 30_000, intervalMs: 50 })
    const m2 = await sendPrivate(T, 'm2')
    const m3 = await sendPrivate(U, 'm3')
    await waitConfirmedAll(b!, ns, [m3])
    await waitConfirmedAll(a!, ns, [m1, m2])
    expect((await messageReaching(b!, ns, m2, ['pending'])).state, 'm2 waits behind m1').to.equal('pending')

    expect((await admin('release', { to: b!.org, message: m1 })).status).to.equal(200)
    await waitConfirmedAll(b!, ns, [m1, m2])
    const order = await confirmationOrder(b!, ns, new Map([[m1, T], [m2, T]]))
    expect(order.get(T)).to.deep.equal([m1, m2])

    const lines: string[] = []
    const code = await runVerb('verify', ['--members', members.map((m) => m.api).join(','), '--namespace', ns], {
      defaultDir: join(dir, 'no-network-folder'),
      out: (l) => lines.push(l),
      err: (l) => lines.push(l),
      usage: (problem) => {
        throw new Error(`usage: ${problem}`)
      },
    })
    expect(code, lines.join('\n')).to.equal(0)
    expect(lines.join('\n')).to.contain('OK: every member agrees with the chain')
  })
})
