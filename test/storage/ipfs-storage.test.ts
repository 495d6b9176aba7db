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

  it('uploads 512 MiB with the uploading process memory flat (the body is streamed, not buffered)', async () => {
    const size = 512 * 1024 * 1024
    const sent = createHash('sha256')
    const before = process.memoryUsage().rss
    let peak = before
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
    try {
      const cid = await storage.upload(kuboDeterministicBytes(size, 'flat-seed', sent), 'big.bin')
      const back = await sha256Of(storage.download(cid))
      expect(back.bytes).to.equal(size)
      expect(back.sha256).to.equal(sent.digest('hex'))
    } finally {
      clearInterval(timer)
    }
    expect((peak - before) / 1024 / 1024, 'MiB the test process grew by while uploading 512 MiB').to.be.below(150)
  })

  it('answers the daemon error when an upload is refused, and validates references', async () => {
    await expectRejects(createIpfsStorage({ api: `${ipfs!.api}/nope`, gateway: ipfs!.gateway, log: () => {} }).upload(new Uint8Array([1])), /404|answered/)
    expect(storage.validRef('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')).to.equal(true)
    expect(storage.validRef('not-a-cid')).to.equal(false)
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
