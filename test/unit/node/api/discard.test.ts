import { expect } from 'chai'
import type { Socket } from 'node:net'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { DATA_PATH, readUntil, startLimitsServer, type LimitsServer } from '../../../support/limits-server.js'

const MiB = 1024 * 1024

/** Whether `text` holds a whole answer whose body is a JSON object (each answer here is one). */
const answered = (text: string): boolean => /\r\n\r\n\{.*\}$/s.test(text)

/** Writes `data` whole, resolving once the kernel took the last of it, or with the write's failure. */
function writeAll(s: Socket, data: string | Buffer): Promise<Error | undefined> {
  return new Promise((resolve) => s.write(data, (err) => resolve(err ?? undefined)))
}

/**
 * A body refused before it was read through (413 here) is answered in a form ordinary clients can read: the rest is
 * read and dropped up to limits.discardBodyBytes, so a client that sends its whole body before reading (most do)
 * reads the 413 instead of failing its write with EPIPE.
 */
describe('the rest of a refused body', () => {
  let server: LimitsServer
  let bounded: LimitsServer

  before(async () => {
    server = await startLimitsServer({ ...DEFAULT_REQUEST_LIMITS })
    bounded = await startLimitsServer({ ...DEFAULT_REQUEST_LIMITS, jsonBodyBytes: 64 * 1024, discardBodyBytes: MiB })
  })
  after(async () => {
    await server.close()
    await bounded.close()
    expect([...server.logs, ...bounded.logs], 'nothing here is a server error').to.deep.equal([])
  })

  it("gets Node's fetch sending 20 MiB its 413, declared or chunked", async () => {
    const body = Buffer.alloc(20 * MiB, 0x61)
    const url = `http://127.0.0.1:${server.port}${DATA_PATH}`
    const declared = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
    expect(declared.status).to.equal(413)
    expect(((await declared.json()) as { error: string }).error).to.equal(`PAYLOAD_TOO_LARGE: the body is ${20 * MiB} bytes; this member accepts at most ${8 * MiB} bytes (limits.jsonBodyBytes)`)
    const chunked = await fetch(url, { method: 'POST', body: new Blob([body]).stream(), duplex: 'half', headers: { 'content-type': 'application/json' } } as RequestInit)
    expect(chunked.status).to.equal(413)
    expect(((await chunked.json()) as { error: string }).error).to.match(/\(limits\.jsonBodyBytes\)$/)
  })

  it('gets a client that writes its whole body before reading the 413, and keeps its connection usable', async () => {
    const s = await server.socket()
    s.pause()
    const failed = await writeAll(s, Buffer.concat([Buffer.from(server.postHead(20 * MiB)), Buffer.alloc(20 * MiB, 0x61)]))
    expect(failed?.message, 'the body was written whole').to.equal(undefined)
    const answer = readUntil(s, answered)
    s.resume()
    const text = await answer
    expect(text).to.match(/^HTTP\/1\.1 413 /)
    expect(text).to.not.match(/\r\nconnection: close\r\n/i)
    expect(text).to.contain('(limits.jsonBodyBytes)')

    const again = readUntil(s, answered)
    await writeAll(s, server.postHead(11) + '{"value":1}')
    expect(await again).to.match(/^HTTP\/1\.1 400 [^]*INVALID_FIELD: reached/)
  })

  it('reads no more than discardBodyBytes: a longer declared rest is answered with Connection: close', async () => {
    const s = await bounded.socket()
    const answer = readUntil(s, () => false)
    s.write(bounded.postHead(8 * MiB))
    // Written while the answer comes: the server closes the connection rather than read 8 MiB.
    const failed = await writeAll(s, Buffer.alloc(8 * MiB, 0x61))
    const text = await answer
    expect(text).to.match(/^HTTP\/1\.1 413 /)
    expect(text).to.match(/\r\nconnection: close\r\n/i)
    expect(failed, 'the connection closed before the body was through').to.be.instanceOf(Error)
  })

  it('cuts a chunked rest once discardBodyBytes of it were dropped', async () => {
    const s = await bounded.socket()
    const answer = readUntil(s, () => false)
    s.write(bounded.postHead('chunked'))
    const chunk = `${(64 * 1024).toString(16)}\r\n${'a'.repeat(64 * 1024)}\r\n`
    let sent = 0
    while (!s.destroyed && sent < 8 * MiB) {
      if (await writeAll(s, chunk)) break
      sent += 64 * 1024
    }
    const text = await answer
    expect(text).to.match(/^HTTP\/1\.1 413 /)
    expect(sent, 'bytes written before the server closed').to.be.below(8 * MiB)
  })
})
