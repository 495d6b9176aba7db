import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { createIpfsStorage } from '../../node/storage/ipfs.js'
import type { SharedStorage } from '../../node/storage/shared-storage.js'
import { freePort, waitFor } from '../../network/process.js'
import {
  kuboDeterministicBytes,
  removeIfPassed,
  sha256Of,
  sleep,
  startIpfsProcess,
  stopIpfsProcess,
  tempDir,
  type IpfsProcess,
} from '../support/ipfs.js'

const HELLO = new TextEncoder().encode('hello world\n')
/** What Kubo's `ipfs add` answers for "hello world\n" (CIDv0, and the same DAG as CIDv1). */
const HELLO_CID_V0 = 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o'
const HELLO_CID_V1 = 'bafybeicg2rebjoofv4kbyovkw7af3rpiitvnl6i7ckcywaq6xjcxnc2mby'

/** The node's shared-storage seam against the real local IPFS process. */
describe('the node shared-storage seam (IPFS)', function () {
  this.timeout(60_000)

  describe('against a running local IPFS', function () {
    let ipfs: IpfsProcess | undefined
    let storage: SharedStorage | undefined
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
      // Removed even after a failure: the blocks of the 512 MiB upload alone are over 600 MiB.
      rmSync(dir, { recursive: true, force: true })
    })

    function running(): { ipfs: IpfsProcess; storage: SharedStorage } {
      if (!ipfs || !storage) throw new Error('the local IPFS did not start')
      return { ipfs, storage }
    }

    it('probe() reports the endpoint connected with the version the API answers, and start() logs nothing when it answers at once', async () => {
      const { ipfs, storage } = running()
      const s = await storage.probe()
      expect(s).to.deep.equal({ connected: true, api: ipfs.api, gateway: ipfs.gateway, version: await apiVersion(ipfs.api) })
      // start() probed in the background; give it time to have logged, if it (wrongly) would.
      await sleep(500)
      expect(lines).to.deep.equal([])
    })

    it('uploads bytes with Kubo-equal CIDs and downloads them through the gateway', async () => {
      const { storage } = running()
      const cid = await storage.upload(HELLO)
      expect(cid).to.equal(HELLO_CID_V0)
      const back = await sha256Of(storage.download(cid))
      expect(back).to.deep.equal({ sha256: createHash('sha256').update(HELLO).digest('hex'), bytes: HELLO.byteLength })
      // The same content under its CIDv1 spelling.
      const v1 = await sha256Of(storage.download(HELLO_CID_V1))
      expect(v1).to.deep.equal(back)
    })

    it('upload with a name containing "/" still answers the plain CID of the content (not a wrapping directory)', async () => {
      const { storage } = running()
      expect(await storage.upload(HELLO, 'hello.txt')).to.equal(HELLO_CID_V0)
      const cid = await storage.upload(HELLO, 'some/dir/hello.txt')
      expect(cid, 'the CID answered for a name with "/"').to.equal(HELLO_CID_V0)
      const back = await sha256Of(storage.download(cid))
      expect(back.sha256).to.equal(createHash('sha256').update(HELLO).digest('hex'))
    })

    it('streams a multi-chunk upload and download', async () => {
      const { storage } = running()
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
      const { storage } = running()
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

    it('download with an AbortSignal aborted mid-stream stops the transfer with an AbortError; the gateway serves the object whole afterwards', async () => {
      const { storage } = running()
      const size = 64 * 1024 * 1024
      const sent = createHash('sha256')
      const cid = await storage.upload(kuboDeterministicBytes(size, 'abort-seed', sent))

      const ac = new AbortController()
      let received = 0
      const err = await (async () => {
        for await (const chunk of storage.download(cid, ac.signal)) {
          received += chunk.byteLength
          if (received >= 1024 * 1024) ac.abort()
        }
      })().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err, 'iteration after abort()').to.be.instanceOf(Error)
      expect((err as Error).name).to.equal('AbortError')
      expect(received, 'bytes received before the abort took effect').to.be.at.least(1024 * 1024).and.below(size / 2)

      // Aborted before it starts: no bytes at all.
      let early = 0
      const pre = await (async () => {
        for await (const chunk of storage.download(cid, AbortSignal.abort())) early += chunk.byteLength
      })().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(pre).to.be.instanceOf(Error)
      expect((pre as Error).name).to.equal('AbortError')
      expect(early).to.equal(0)

      const whole = await sha256Of(storage.download(cid))
      expect(whole).to.deep.equal({ sha256: sent.digest('hex'), bytes: size })
    })

    it('download of a CID the store does not hold rejects with the gateway 404, for CIDv0 and CIDv1', async () => {
      const { ipfs, storage } = running()
      // A CID of random bytes: certainly never added to this store.
      const absent = CID.createV0(await sha256.digest(randomBytes(32)))
      for (const ref of [absent.toString(), absent.toV1().toString()]) {
        // The local gateway answers an absent block at once (no network to search), so no timeout is needed.
        const err = await rejection(sha256Of(storage.download(ref)))
        expect(err.message).to.equal(`ipfs gateway ${ipfs.gateway} answered 404 for ${ref}`)
      }
    })

    it('upload to an API path that is not Kubo’s rejects with the daemon’s status and answer', async () => {
      const { ipfs } = running()
      const wrong = createIpfsStorage({ api: `${ipfs.api}/nope`, gateway: ipfs.gateway, log: () => {} })
      const err = await rejection(wrong.upload(new Uint8Array([1])))
      expect(err.message).to.equal('ipfs add answered 404: 404 page not found')
    })
  })

  describe('validRef', function () {
    const storage = createIpfsStorage({ api: 'http://127.0.0.1:9', gateway: 'http://127.0.0.1:9', log: () => {} })

    it('is true for a CIDv0 and a CIDv1', () => {
      expect(storage.validRef(HELLO_CID_V0)).to.equal(true)
      expect(storage.validRef(HELLO_CID_V1)).to.equal(true)
    })

    it('is false for an empty string, a non-CID, a hex hash, a path, and a padded CID', () => {
      const hex = createHash('sha256').update(HELLO).digest('hex')
      for (const ref of ['', 'not-a-cid', hex, `${HELLO_CID_V0}/x`, `/ipfs/${HELLO_CID_V0}`, ` ${HELLO_CID_V0}`, 'Qmfoo']) {
        expect(storage.validRef(ref), JSON.stringify(ref)).to.equal(false)
      }
    })
  })

  describe('against endpoints that do not answer', function () {
    const storages: SharedStorage[] = []
    const procs: IpfsProcess[] = []
    const servers: Server[] = []
    const dirs: string[] = []

    /** A storage stopped by afterEach, whatever the test does. */
    function track(s: SharedStorage): SharedStorage {
      storages.push(s)
      return s
    }

    afterEach(async () => {
      for (const s of storages.splice(0)) await s.stop()
      for (const p of procs.splice(0)) await stopIpfsProcess(p)
      for (const srv of servers.splice(0)) await closeServer(srv)
    })

    after(function () {
      removeIfPassed(this, dirs)
    })

    it('probe() of a closed port answers connected: false with an error naming the API URL, without throwing; upload and download reject', async () => {
      const { api, gateway } = await closedEndpoints()
      const storage = track(createIpfsStorage({ api, gateway, log: () => {} }))
      const s = await storage.probe()
      expect(s.connected).to.equal(false)
      expect(s.api).to.equal(api)
      expect(s.gateway).to.equal(gateway)
      expect(s.version).to.equal(undefined)
      expect(s.error).to.be.a('string')
      expect(s.error!.startsWith(`cannot reach IPFS API ${api}: `), s.error).to.equal(true)
      expect(s.error!.length).to.be.above(`cannot reach IPFS API ${api}: `.length)

      const up = await rejection(storage.upload(HELLO))
      expect(up.message).to.equal(`connect ECONNREFUSED ${new URL(api).host}`)
      const down = await rejection(sha256Of(storage.download(HELLO_CID_V0)))
      // The gateway is named, and so is the reason.
      expect(down.message).to.equal(`cannot reach IPFS gateway ${gateway}: connect ECONNREFUSED ${new URL(gateway).host}`)
    })

    it('start() against a closed port logs exactly one line naming the endpoint while it stays unreachable; once an IPFS process answers there, one line saying it connected; a storage stopped before that logs nothing more', async () => {
      const { api, gateway, apiPort, gatewayPort } = await closedEndpoints()
      const watching: string[] = []
      const stopped: string[] = []
      const storage = track(createIpfsStorage({ api, gateway, log: (l) => watching.push(l) }))
      const early = track(createIpfsStorage({ api, gateway, log: (l) => stopped.push(l) }))
      const reason = (await storage.probe()).error
      expect(reason).to.be.a('string')
      const unreachable = `ipfs: ${reason}; retrying`
      expect(unreachable).to.contain(api)

      storage.start()
      early.start()
      // Long enough for several retries (250, 500, 1000 ms waits), all failing the same way.
      await sleep(1500)
      expect(watching).to.deep.equal([unreachable])
      expect(stopped).to.deep.equal([unreachable])
      await early.stop()

      const dir = tempDir('storage-seam-recovery')
      dirs.push(dir)
      const ipfs = await startIpfsProcess(dir, { api: apiPort, gateway: gatewayPort })
      procs.push(ipfs)
      expect(ipfs.api).to.equal(api)
      const version = await apiVersion(api)

      // Its next retry finds the endpoint (the backoff is capped at 5 s).
      await waitFor('the storage to log that it connected', () => watching.length >= 2, { timeoutMs: 20_000, intervalMs: 50 })
      expect(watching).to.deep.equal([unreachable, `ipfs: connected to ${api} (${version})`])
      // The stopped storage ran on the same schedule: had it kept probing, it would have connected by now too.
      await sleep(1000)
      expect(stopped, 'lines logged by the storage stopped before the endpoint came up').to.deep.equal([unreachable])
      expect(watching).to.have.length(2)
      expect((await storage.probe()).connected).to.equal(true)
    })

    it('retries an endpoint that refuses with growing waits, logging the reason once, and neither probes nor logs after stop()', async () => {
      const refusing = await refusingServer()
      servers.push(refusing.server)
      const api = `http://127.0.0.1:${refusing.port}`
      const lines: string[] = []
      const storage = track(createIpfsStorage({ api, gateway: api, log: (l) => lines.push(l) }))
      const reason = (await storage.probe()).error
      expect(reason).to.be.a('string').and.contain(api)
      refusing.attempts.length = 0

      storage.start()
      await waitFor('four connection attempts', () => refusing.attempts.length >= 4, { timeoutMs: 20_000, intervalMs: 20 })
      const [a0 = 0, a1 = 0, a2 = 0, a3 = 0] = refusing.attempts
      // The waits double from 250 ms (timers never fire early by more than a millisecond): a backoff, not a loop.
      expect(a1 - a0, 'wait before the 1st retry (ms)').to.be.at.least(240)
      expect(a2 - a1, 'wait before the 2nd retry (ms)').to.be.at.least(490)
      expect(a3 - a2, 'wait before the 3rd retry (ms)').to.be.at.least(990)
      expect(lines).to.deep.equal([`ipfs: ${reason}; retrying`])

      await storage.stop()
      const attempts = refusing.attempts.length
      // The next retry was due 2 s after the 4th attempt.
      await sleep(2500)
      expect(refusing.attempts.length, 'connection attempts after stop()').to.equal(attempts)
      expect(lines).to.deep.equal([`ipfs: ${reason}; retrying`])
    })

    it('stop() right after start() (its first probe still in flight) logs nothing afterwards', async () => {
      const { api, gateway } = await closedEndpoints()
      const lines: string[] = []
      const storage = track(createIpfsStorage({ api, gateway, log: (l) => lines.push(l) }))
      storage.start()
      await storage.stop()
      await sleep(500)
      expect(lines, 'lines logged after stop() resolved').to.deep.equal([])
    })

    it('download of a malformed reference rejects without asking the gateway', async () => {
      const counting = await refusingServer()
      servers.push(counting.server)
      const gateway = `http://127.0.0.1:${counting.port}`
      const storage = track(createIpfsStorage({ api: gateway, gateway, log: () => {} }))
      for (const ref of ['', 'not-a-cid', `${HELLO_CID_V0}/x`]) {
        expect(storage.validRef(ref)).to.equal(false)
        const err = await rejection(sha256Of(storage.download(ref)))
        // multiformats' parse error, not a gateway answer or a connection failure.
        expect(err.message, JSON.stringify(ref)).to.match(/base58btc/)
      }
      expect(counting.attempts, 'connections to the gateway').to.deep.equal([])
    })
  })
})

/** Resolves with what `p` rejected with (an Error), failing when it fulfils. */
async function rejection(p: Promise<unknown>): Promise<Error> {
  const outcome = await p.then(
    (v: unknown) => ({ fulfilled: v }),
    (e: unknown) => ({ rejected: e }),
  )
  if ('fulfilled' in outcome) expect.fail(`expected a rejection, got ${JSON.stringify(outcome.fulfilled)}`)
  expect(outcome.rejected, 'the rejection').to.be.instanceOf(Error)
  return outcome.rejected as Error
}

/** The version the Kubo RPC API itself answers. */
async function apiVersion(api: string): Promise<string> {
  const res = await fetch(`${api}/api/v0/version`, { method: 'POST' })
  expect(res.status).to.equal(200)
  const body = (await res.json()) as { Version?: unknown }
  expect(body.Version).to.be.a('string').and.not.equal('')
  return body.Version as string
}

/** Two distinct ports that were free on 127.0.0.1 a moment ago (nothing listens there). */
async function closedEndpoints(): Promise<{ api: string; gateway: string; apiPort: number; gatewayPort: number }> {
  const apiPort = await freePort()
  let gatewayPort = await freePort()
  while (gatewayPort === apiPort) gatewayPort = await freePort()
  return { api: `http://127.0.0.1:${apiPort}`, gateway: `http://127.0.0.1:${gatewayPort}`, apiPort, gatewayPort }
}

/** A TCP server on 127.0.0.1 that records the time of each connection and closes it at once. */
async function refusingServer(): Promise<{ server: Server; port: number; attempts: number[] }> {
  const attempts: number[] = []
  const server = createServer((socket: Socket) => {
    attempts.push(performance.now())
    socket.destroy()
  })
  await new Promise<void>((res, rej) => {
    server.once('error', rej)
    server.listen(0, '127.0.0.1', () => res())
  })
  const addr = server.address()
  const port = typeof addr === 'object' && addr ? addr.port : 0
  return { server, port, attempts }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((res) => server.close(() => res()))
}
