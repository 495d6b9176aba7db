import { expect } from 'chai'
import { createHash } from 'node:crypto'
import v8 from 'node:v8'
import vm from 'node:vm'
import { ParleyError, isParleyError } from '../../node/core/errors.js'
import type { BlobRef } from '../../node/exchange/types.js'
import type { Hash } from '../../node/core/ids.js'
import { deferred, makeBatch, makeNode, rawRequest, settle, startAll, type TestNode } from '../support/exchange-harness.js'

const MiB = 1024 * 1024

/** `size` bytes of a repeatable pattern in 64 KiB pieces, each freshly allocated (as a file read would be). */
function pattern(size: number, chunk = 64 * 1024): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      for (let at = 0, i = 0; at < size; at += chunk, i++) {
        const piece = Buffer.alloc(Math.min(chunk, size - at), i % 251)
        piece.writeUInt32BE(i, 0)
        yield piece
      }
    },
  }
}

async function describeBlob(content: AsyncIterable<Uint8Array>): Promise<BlobRef> {
  const sha = createHash('sha256')
  let size = 0
  for await (const c of content) {
    sha.update(c)
    size += c.length
  }
  return { hash: sha.digest('hex') as Hash, size }
}

/** What the receiving handler saw: bytes read, their hash, and how its read of the body ended. */
interface Seen {
  bytes: number
  hash?: string
  error?: unknown
}

describe('exchange: blobs, streamed and checked', () => {
  let a: TestNode
  let b: TestNode
  let seen: Seen[]

  before(async () => {
    ;[a, b] = await Promise.all([makeNode('org0'), makeNode('org1')])
    await startAll([a, b])
  })
  after(async () => {
    await Promise.all([a, b].map((n) => n?.exchange.stop()))
  })
  beforeEach(() => {
    seen = []
    b.logs.length = 0
    // A handler that hashes what it reads and records how reading ended (a real one would write it to disk).
    b.blobHandler = async (_from, _blob, content) => {
      const s: Seen = { bytes: 0 }
      seen.push(s)
      const sha = createHash('sha256')
      try {
        for await (const c of content) {
          s.bytes += c.length
          sha.update(c)
        }
        s.hash = sha.digest('hex')
      } catch (err) {
        s.error = err
        throw err
      }
    }
  })

  it('streams a 50 MiB blob with flat memory on both ends, hash and size verified', async function () {
    this.timeout(30_000)
    v8.setFlagsFromString('--expose-gc')
    const gc = vm.runInNewContext('gc') as () => void
    const settleGc = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) {
        gc()
        await new Promise((r) => setImmediate(r))
      }
    }
    const size = 50 * MiB
    const blob = await describeBlob(pattern(size))
    let yielded = 0
    const source: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        for await (const c of pattern(size)) {
          yielded += c.length
          yield c
        }
      },
    }
    // A fifth of the way, the receiver stops reading for a while. Streamed with backpressure, the sender then stops
    // reading its content once the sockets' buffers are full (the kernel's, on loopback: a few MiB, up to tens);
    // buffered whole, it reads the other 40 MiB at once. Meanwhile the process holds only what is live in buffers.
    const mid: { inFlight?: number; live?: number; rss?: number } = {}
    await settleGc()
    const base = process.memoryUsage()
    const inner = b.blobHandler
    b.blobHandler = async (from, ref, content) => {
      let read = 0
      async function* paced(): AsyncIterable<Uint8Array> {
        for await (const c of content) {
          read += c.length
          if (mid.inFlight === undefined && read >= size / 5) {
            await new Promise((r) => setTimeout(r, 300))
            mid.inFlight = yielded - read
            await settleGc()
            const m = process.memoryUsage()
            mid.live = m.arrayBuffers - base.arrayBuffers
            mid.rss = m.rss - base.rss
          }
          yield c
        }
      }
      await inner(from, ref, paced())
    }
    let peakRss = 0
    let peakRaw = 0
    const timer = setInterval(() => {
      const m = process.memoryUsage()
      peakRss = Math.max(peakRss, m.rss - base.rss)
      peakRaw = Math.max(peakRaw, m.arrayBuffers - base.arrayBuffers)
    }, 10)
    const t0 = Date.now()
    try {
      await a.exchange.sendBlob(b.peer, blob, source)
    } finally {
      clearInterval(timer)
    }
    const ms = Date.now() - t0 - 300
    expect(seen).to.have.length(1)
    expect(seen[0]).to.deep.equal({ bytes: size, hash: blob.hash })
    const mib = (n: number): string => (n / MiB).toFixed(1)
    console.log(
      `      50 MiB blob, both ends in this process: ~${ms} ms streaming (${((size / MiB / ms) * 1000).toFixed(0)} MiB/s). ` +
        `Receiver paused at 10 MiB: ${mib(mid.inFlight!)} MiB sent but unread, live arrayBuffers +${mib(mid.live!)} MiB, RSS +${mib(mid.rss!)} MiB. ` +
        `Peaks over the whole transfer (garbage included): arrayBuffers +${mib(peakRaw)} MiB, RSS +${mib(peakRss)} MiB`,
    )
    // Both ends run here, so each end holds at most these figures. What is sent but unread sits mostly in the
    // kernel's loopback buffers (tcp_rmem here autotunes up to 32 MiB): the process holds almost nothing live. RSS and the pre-GC figure are
    // garbage (every chunk, TLS record and decrypted piece is a fresh buffer) that V8 collects when external memory
    // has grown by a few tens of MiB, whatever the blob's size: bounded by that policy, not by the blob.
    expect(mid.inFlight, 'the sender stops reading ahead').to.be.below(20 * MiB)
    expect(mid.live).to.be.below(8 * MiB)
    expect(peakRss).to.be.below(size)
  })

  it('bytes other than the announced hash: the handler read throws BAD_PEER_DATA, the sender gets BAD_REQUEST at once', async () => {
    const blob = await describeBlob(pattern(MiB))
    const r = await settle(a.exchange.sendBlob(b.peer, { ...blob, hash: 'e'.repeat(64) as Hash }, pattern(MiB)))
    expect(isParleyError(r.err, 'BAD_REQUEST'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.match(/400 BAD_PEER_DATA: blob announced as e{64} hashes to [0-9a-f]{64}/)
    expect(seen).to.have.length(1) // no retry
    expect(isParleyError(seen[0]!.error, 'BAD_PEER_DATA'), String(seen[0]!.error)).to.equal(true)
    expect(b.logs.some((l) => l.includes(`refused blob ${'e'.repeat(64)}`) && l.includes(a.peer.node))).to.equal(true)
  })

  it('a body shorter than announced: BAD_PEER_DATA in the handler, BAD_REQUEST for the sender', async () => {
    const blob = await describeBlob(pattern(MiB))
    const r = await settle(a.exchange.sendBlob(b.peer, { ...blob, size: MiB + 10 }, pattern(MiB)))
    expect(isParleyError(r.err, 'BAD_REQUEST'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.contain(`ended after ${MiB} bytes; ${MiB + 10} were announced`)
    expect(isParleyError(seen[0]!.error, 'BAD_PEER_DATA')).to.equal(true)
  })

  it('a body longer than announced (a peer not following the protocol): cut off at the size, 400, BAD_PEER_DATA', async () => {
    const url = (h: string): string => `${b.peer.endpoint}/api/v1/blobs/${h}`
    const small = await describeBlob(pattern(10))
    const r1 = await rawRequest(url(small.hash), a.tls, { method: 'PUT', headers: { 'parley-blob-size': '10' }, body: pattern(20) })
    expect(r1.status).to.equal(400)
    expect(JSON.parse(r1.body).error).to.match(/^BAD_PEER_DATA: blob [0-9a-f]{64} is longer than the announced 10 bytes/)
    expect(isParleyError(seen[0]!.error, 'BAD_PEER_DATA')).to.equal(true)
    expect(seen[0]!.bytes).to.equal(0)

    // 1 MiB announced, 64 MiB coming: the receiver stops reading past 1 MiB (the sender may see the answer or a reset).
    const big = await describeBlob(pattern(MiB))
    const r2 = await settle(rawRequest(url(big.hash), a.tls, { method: 'PUT', headers: { 'parley-blob-size': String(MiB) }, body: pattern(64 * MiB) }))
    if (r2.ok) expect(r2.ok.status).to.equal(400)
    expect(isParleyError(seen[1]!.error, 'BAD_PEER_DATA')).to.equal(true)
    expect(seen[1]!.bytes).to.be.at.most(MiB)

    // Through the exchange, the sender itself stops at the announced size: BAD_REQUEST, nothing past it sent.
    const r3 = await settle(a.exchange.sendBlob(b.peer, big, pattern(2 * MiB)))
    expect(isParleyError(r3.err, 'BAD_REQUEST'), String(r3.err)).to.equal(true)
    expect((r3.err as Error).message).to.contain(`longer than the announced ${MiB} bytes`)
    await new Promise((r) => setTimeout(r, 50))
    expect(seen[2]?.bytes ?? 0).to.be.at.most(MiB)
    expect(seen[2]?.hash, 'the receiver never verified it').to.equal(undefined)
  })

  it('refuses a malformed path hash or size header 400 without calling the handler', async () => {
    const put = (path: string, headers: Record<string, string>): Promise<{ status: number }> => rawRequest(`${b.peer.endpoint}${path}`, a.tls, { method: 'PUT', headers, body: 'abc' })
    expect((await put('/api/v1/blobs/XYZ', { 'parley-blob-size': '3' })).status).to.equal(400)
    expect((await put(`/api/v1/blobs/${'a'.repeat(64)}`, {})).status).to.equal(400)
    expect((await put(`/api/v1/blobs/${'a'.repeat(64)}`, { 'parley-blob-size': '-3' })).status).to.equal(400)
    expect((await put(`/api/v1/blobs/${'a'.repeat(64)}`, { 'parley-blob-size': '4', 'content-length': '3' })).status).to.equal(400)
    expect(seen).to.have.length(0)
  })

  it("rethrows the content's own failure unchanged, without retrying", async () => {
    const blob = await describeBlob(pattern(MiB))
    const disk = new Error('EIO: the local store failed')
    let reads = 0
    const failing: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        reads++
        yield Buffer.alloc(1024)
        throw disk
      },
    }
    const r = await settle(a.exchange.sendBlob(b.peer, blob, failing))
    expect(r.err).to.equal(disk)
    expect(reads).to.equal(1)
  })

  it('a refusal mid-upload: the sender hears it (BAD_REQUEST) and closes its content, which it stops reading', async () => {
    const size = 32 * MiB
    const blob = await describeBlob(pattern(size))
    let opened = 0
    let closed = 0
    let yielded = 0
    const tracked: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        opened++
        try {
          for await (const c of pattern(size)) {
            yielded += c.length
            yield c
          }
        } finally {
          closed++
        }
      },
    }
    b.blobHandler = async (_from, _blob, content) => {
      let read = 0
      for await (const c of content) {
        read += c.length
        if (read >= MiB) throw new ParleyError('BAD_PEER_DATA', 'this blob is not wanted here')
      }
    }
    const r = await settle(a.exchange.sendBlob(b.peer, blob, tracked))
    expect(isParleyError(r.err, 'BAD_REQUEST'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.contain('400 BAD_PEER_DATA: this blob is not wanted here')
    expect([opened, closed]).to.deep.equal([1, 1])
    expect(yielded).to.be.below(size)
  })

  it('re-reads the content from the start on each attempt (a 503, then stored), and the handler sees it whole', async () => {
    const blob = await describeBlob(pattern(3 * MiB))
    let calls = 0
    const inner = b.blobHandler
    b.blobHandler = async (from, ref, content) => {
      if (++calls === 1) throw new ParleyError('UNAVAILABLE', 'database closing')
      await inner(from, ref, content)
    }
    await a.exchange.sendBlob(b.peer, blob, pattern(3 * MiB))
    expect(calls).to.equal(2)
    expect(seen).to.deep.equal([{ bytes: 3 * MiB, hash: blob.hash }])
  })

  it('a handler that resolves without reading the blob through gets 500, never 204', async () => {
    b.blobHandler = async () => {}
    const blob = await describeBlob(pattern(1000))
    const r = await settle(a.exchange.sendBlob(b.peer, blob, pattern(1000)))
    expect(isParleyError(r.err, 'UNAVAILABLE'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.contain('500 INTERNAL: the blob handler resolved without reading the blob through')
  })
})

describe('exchange: time limits (a stalled peer pins no socket)', () => {
  it('an upload that stalls mid-body is dropped after the idle timeout: the handler read throws UNAVAILABLE', async () => {
    const [a, b] = await Promise.all([makeNode('org0'), makeNode('org1', { idleTimeoutMs: 400 })])
    await startAll([a, b])
    const ended = deferred<unknown>()
    b.blobHandler = async (_from, _blob, content) => {
      try {
        for await (const c of content) void c
        ended.resolve(undefined)
      } catch (err) {
        ended.resolve(err)
        throw err
      }
    }
    const stall = deferred()
    const stalled: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        yield Buffer.alloc(1000)
        await stall.promise
      },
    }
    const t0 = Date.now()
    const raw = settle(rawRequest(`${b.peer.endpoint}/api/v1/blobs/${'a'.repeat(64)}`, a.tls, { method: 'PUT', headers: { 'parley-blob-size': String(MiB) }, body: stalled }))
    const err = await ended.promise
    expect(isParleyError(err, 'UNAVAILABLE'), String(err)).to.equal(true)
    expect(String(err)).to.match(/broke after 1000 of 1048576 bytes/)
    expect(Date.now() - t0).to.be.within(300, 3000)
    expect((await raw).err, 'the connection was dropped').to.not.equal(undefined)
    expect(b.logs.some((l) => l.includes('did not arrive whole'))).to.equal(true)
    stall.resolve()
    await Promise.all([a.exchange.stop(), b.exchange.stop()])
  })

  it('a peer that never answers: each attempt gives up after the idle timeout, then UNAVAILABLE', async () => {
    const [a, b] = await Promise.all([makeNode('org0', { idleTimeoutMs: 300, retry: { attempts: 2, firstWaitMs: 50, maxWaitMs: 50 } }), makeNode('org1')])
    await startAll([a, b])
    const never = deferred()
    let calls = 0
    b.batchHandler = async () => {
      calls++
      await never.promise
    }
    const t0 = Date.now()
    const r = await settle(a.exchange.sendBatch(b.peer, makeBatch('org0')))
    expect(isParleyError(r.err, 'UNAVAILABLE'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.match(/no progress for 300 ms \(gave up after 2 attempts, p2p\.retry\)/)
    expect(Date.now() - t0).to.be.within(600, 3000)
    expect(calls).to.equal(2)
    never.resolve()
    await Promise.all([a.exchange.stop(), b.exchange.stop()])
  })
})
