import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { createIpfsStorage } from '../../node/storage/ipfs.js'
import type { SharedStorage } from '../../node/storage/shared-storage.js'
import { kuboDeterministicBytes, sha256Of, startIpfsProcess, stopIpfsProcess, tempDir, type IpfsProcess } from '../ipfs/helpers.js'
import { rmSync } from 'node:fs'

/** The node's shared-storage seam against the real local IPFS process. */
describe('the node shared-storage seam (IPFS)', function () {
  this.timeout(60_000)
  let ipfs: IpfsProcess | undefined
  let storage: SharedStorage
  const dir = tempDir('storage-seam')
  const lines: string[] = []

  before(async () => {
    ipfs = await startIpfsProcess(dir)
    storage = createIpfsStorage({ api: ipfs.api, gateway: ipfs.gateway, log: (l) => lines.push(l) })
    storage.start()
  })

  after(async () => {
    await storage?.stop()
    await stopIpfsProcess(ipfs)
    rmSync(dir, { recursive: true, force: true })
  })

  it('reports the endpoint connected with its version', async () => {
    const s = await storage.probe()
    expect(s.connected).to.equal(true)
    expect(s.version).to.be.a('string')
    expect(lines).to.deep.equal([])
  })

  it('uploads bytes with Kubo-equal CIDs and downloads them through the gateway', async () => {
    const cid = await storage.upload(new TextEncoder().encode('hello world\n'))
    expect(cid).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
    const back = await sha256Of(storage.download(cid))
    expect(back.sha256).to.equal(createHash('sha256').update('hello world\n').digest('hex'))
  })

  it('streams a multi-chunk upload and download', async () => {
    const size = 175 * 256 * 1024
    const sent = createHash('sha256')
    const cid = await storage.upload(kuboDeterministicBytes(size, 'v0-seed', sent))
    // Kubo's published CID for 175 x 256 KiB of its deterministic bytes (a two-level balanced tree).
    expect(cid).to.equal('QmepeWtdmS1hHXx1oZXsPUv6bMrfRRKfZcoPPU4eEfjnbf')
    const back = await sha256Of(storage.download(cid))
    expect(back.bytes).to.equal(size)
    expect(back.sha256).to.equal(sent.digest('hex'))
  })

  it('rejects a download of content the store does not hold, and a malformed reference', async () => {
    const absent = 'QmNLei78zWmzUdbeRB3CiUfAizWUrbeeZh5K1rhAQKCh51'
    await expectRejects(sha256Of(storage.download(absent)), /404/)
    await expectRejects(sha256Of(storage.download('not-a-cid')), /./)
  })

  it('reports an unreachable endpoint with the reason, without throwing', async () => {
    const gone = createIpfsStorage({ api: 'http://127.0.0.1:1', gateway: 'http://127.0.0.1:1', log: () => {} })
    const s = await gone.probe()
    expect(s.connected).to.equal(false)
    expect(s.error).to.contain('http://127.0.0.1:1')
  })
})

async function expectRejects(p: Promise<unknown>, re: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  )
  expect(err, 'expected a rejection').to.be.instanceOf(Error)
  expect(err!.message).to.match(re)
}
