import { expect } from 'chai'
import { create } from 'kubo-rpc-client'
import { spawnLogged, stopPid } from '../../network/process.js'
import { programArgs } from '../support/programs.js'
import { collect, readLog, removeIfPassed, startIpfsProcess, stopIpfsProcess, tempDir, type IpfsProcess } from '../support/ipfs.js'

describe('local IPFS: the process', function () {
  this.timeout(60_000)
  const dir = tempDir('ipfs-process')
  const intruderDir = tempDir('ipfs-intruder')
  let ipfs: IpfsProcess | undefined
  let intruder: number | undefined

  before(async () => {
    ipfs = await startIpfsProcess(dir)
  })
  after(async function () {
    if (intruder !== undefined) await stopPid(intruder)
    await stopIpfsProcess(ipfs)
    removeIfPassed(this, [dir, intruderDir])
  })

  it('answers version and id, with a libp2p-style peer ID', async () => {
    const client = create({ url: ipfs?.api })
    const v = await client.version()
    expect(v.version).to.be.a('string').and.not.equal('')
    const id = await client.id()
    expect(id.id.toString()).to.match(/^12D3KooW/)
    expect(id.agentVersion).to.match(/^parley-ipfs\//)
  })

  it('on a busy port, prints one line naming the port and exits 1', async () => {
    const busy = ipfs?.apiPort ?? 0
    const logFile = `${dir}/intruder.log`
    const proc = spawnLogged({
      name: 'ipfs-intruder',
      command: process.execPath,
      args: await programArgs('ipfs', ['--dir', intruderDir, '--api-port', String(busy), '--gateway-port', '1']),
      logFile,
    })
    intruder = proc.pid
    expect(await proc.exited).to.equal(1)
    const lines = readLog(logFile).trim().split('\n')
    expect(lines).to.have.length(1)
    expect(lines[0]).to.contain(String(busy))
  })

  it('after SIGTERM (exit 0) and a restart on the same folder, serves what was added before, under the same peer ID', async () => {
    const before = ipfs
    if (!before) throw new Error('not started')
    const client = create({ url: before.api })
    const content = Buffer.from(`kept across restarts ${Date.now()}\n`)
    const { cid } = await client.add(content)
    const peer = (await client.id()).id.toString()

    await stopPid(before.proc.pid)
    expect(await before.proc.exited).to.equal(0)

    ipfs = await startIpfsProcess(dir, { api: before.apiPort, gateway: before.gatewayPort })
    const again = create({ url: ipfs.api })
    expect(Buffer.compare(await collect(again.cat(cid)), content)).to.equal(0)
    const res = await fetch(`${ipfs.gateway}/ipfs/${cid.toString()}`)
    expect(res.status).to.equal(200)
    expect(Buffer.compare(Buffer.from(await res.arrayBuffer()), content)).to.equal(0)
    expect((await again.id()).id.toString()).to.equal(peer)
  })
})
