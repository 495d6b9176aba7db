import { expect } from 'chai'
import { mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import { createNodeCertificate } from '../../network/tls.js'
import { deployBatchPin, fundAccounts } from '../../network/chain/deploy.js'
import { freePort, isAlive, spawnLogged, stopPid, waitFor, type SpawnedProcess } from '../../network/process.js'
import type { NodeConfigFile } from '../../node/config.js'
import { startChain, stopAllChains } from '../support/chain-process.js'
import { getJson, tempDir } from '../support/network.js'
import { programArgs } from '../support/programs.js'

interface Status {
  chain: { connected: boolean; error?: string }
  ipfs: { connected: boolean; error?: string }
}

/** A member node process with a hand-written config, as someone running one outside `network:up` would. */
async function startLoneNode(dir: string, chain: { rpc: string; contract: string }, ipfsApi: string) {
  mkdirSync(join(dir, 'tls'), { recursive: true })
  const wallet = Wallet.createRandom()
  writeFileSync(join(dir, 'signing.key'), wallet.privateKey)
  const tls = await createNodeCertificate('lone', 'lonenode')
  writeFileSync(join(dir, 'tls/cert.pem'), tls.cert)
  writeFileSync(join(dir, 'tls/key.pem'), tls.key)
  const apiPort = await freePort()
  const cfg: NodeConfigFile = {
    org: 'lone',
    node: 'lonenode',
    signingKeyFile: 'signing.key',
    chain: { ...chain, firstBlock: 0 },
    ipfs: { api: ipfsApi, gateway: ipfsApi },
    api: { port: apiPort },
    p2p: { port: await freePort(), certFile: 'tls/cert.pem', keyFile: 'tls/key.pem' },
    dataDir: 'data',
  }
  writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg))
  const logFile = join(dir, 'node.log')
  const proc = spawnLogged({ name: 'lone', command: process.execPath, args: await programArgs('node', ['--config', join(dir, 'config.json')]), logFile })
  const api = `http://127.0.0.1:${apiPort}`
  await waitFor('the node API', async () => (await fetch(`${api}/api/v1/status`)).ok)
  return { proc, api, logFile, address: wallet.address, log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') }
}

const count = (text: string, re: RegExp) => text.split('\n').filter((l) => re.test(l)).length

describe('a member node facing a wrong or missing chain and IPFS', function () {
  this.timeout(120_000)
  const procs: SpawnedProcess[] = []
  const dirs: string[] = []

  after(async () => {
    for (const p of procs) await stopPid(p.pid)
    // Stops the chains this file started, by PID, and removes their state folders.
    await stopAllChains()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
    expect(procs.filter((p) => isAlive(p.pid))).to.deep.equal([])
  })

  it('says once that the contract address is wrong and IPFS unreachable, keeps running, and recovers when IPFS appears', async () => {
    const chain = await startChain()
    const dir = tempDir('lone-contract')
    dirs.push(dir)
    const ipfsApiPort = await freePort()
    const ipfsGatewayPort = await freePort()
    const wrong = '0x' + '12'.repeat(20)
    const node = await startLoneNode(dir, { rpc: chain.rpc, contract: wrong }, `http://127.0.0.1:${ipfsApiPort}`)
    procs.push(node.proc)

    await waitFor('the status to show both problems', async () => {
      const { body } = await getJson<Status>(`${node.api}/api/v1/status`)
      return body.chain.error !== undefined && body.ipfs.error !== undefined
    })
    const { body } = await getJson<Status>(`${node.api}/api/v1/status`)
    expect(body.chain.connected).to.equal(false)
    expect(body.chain.error).to.contain(wrong)
    expect(body.ipfs.connected).to.equal(false)
    expect(body.ipfs.error).to.contain(String(ipfsApiPort))

    // Several retry periods later there is still exactly one line for each problem, and the node is alive.
    await new Promise((r) => setTimeout(r, 6000))
    const log = node.log()
    expect(count(log, new RegExp(`chain: .*${wrong}`)), log).to.equal(1)
    expect(count(log, /ipfs: cannot reach/), log).to.equal(1)
    expect(isAlive(node.proc.pid)).to.equal(true)

    const ipfs = spawnLogged({
      name: 'ipfs',
      command: process.execPath,
      args: await programArgs('ipfs', ['--dir', join(dir, 'ipfs'), '--api-port', String(ipfsApiPort), '--gateway-port', String(ipfsGatewayPort)]),
      logFile: join(dir, 'ipfs.log'),
    })
    procs.push(ipfs)
    await waitFor('the node to see IPFS', async () => (await getJson<Status>(`${node.api}/api/v1/status`)).body.ipfs.connected, { timeoutMs: 30_000 })
    await waitFor('the recovery line', () => /ipfs: connected/.test(node.log()), { timeoutMs: 10_000 })
  })

  it('says once that the chain is unreachable, keeps retrying, and follows it once it comes up', async () => {
    const chainPort = await freePort()
    const rpc = `http://127.0.0.1:${chainPort}`
    // The first contract Hardhat's account #0 deploys always lands at this address.
    const contract = '0x5fbdb2315678afecb367f032d93f642f64180aa3'
    const dir = tempDir('lone-chain')
    dirs.push(dir)
    const node = await startLoneNode(dir, { rpc, contract }, 'http://127.0.0.1:1')
    procs.push(node.proc)
    await waitFor('the unreachable line', () => /chain: .*cannot reach/.test(node.log()))
    await new Promise((r) => setTimeout(r, 4000))
    expect(count(node.log(), /chain: .*cannot reach/), node.log()).to.equal(1)
    expect(isAlive(node.proc.pid)).to.equal(true)

    await startChain({ port: chainPort })
    const deployed = await deployBatchPin(rpc)
    expect(deployed.address.toLowerCase()).to.equal(contract)
    await fundAccounts(rpc, [node.address], '1')
    await waitFor('the node to follow the chain', async () => (await getJson<Status>(`${node.api}/api/v1/status`)).body.chain.connected, { timeoutMs: 30_000 })
  })
})
