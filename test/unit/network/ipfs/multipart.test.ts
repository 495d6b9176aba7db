import { Readable } from 'node:stream'
import { expect } from 'chai'
import { IpfsError } from '../../../../network/ipfs/errors.js'
import { parseMultipart, type Part } from '../../../../network/ipfs/multipart.js'

const TYPE = 'multipart/form-data; boundary=xyz'

const part = (disposition: string, type: string | undefined, body: string): string =>
  `--xyz\r\nContent-Disposition: form-data; ${disposition}\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n${body}\r\n`

/** `text` as a stream of `size`-byte chunks, so boundaries and headers fall across chunk edges. */
function chunked(text: string, size = 3): Readable {
  const bytes = Buffer.from(text)
  const chunks: Buffer[] = []
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size))
  return Readable.from(chunks, { objectMode: false })
}

async function text(body: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = []
  for await (const c of body) out.push(Buffer.from(c))
  return Buffer.concat(out).toString('utf8')
}

async function failure(source: Readable, type = TYPE, read = true): Promise<IpfsError> {
  try {
    for await (const p of parseMultipart(source, type)) if (read) await text(p.body)
  } catch (err) {
    if (err instanceof IpfsError) return err
    throw err
  }
  throw new Error('the body was accepted')
}

describe('ipfs add: multipart parts', () => {
  it('gives each part with its name, path, type and body, wherever the chunks end', async () => {
    const body =
      'preamble\r\n' +
      part('name="file"; filename="a.txt"', 'application/octet-stream', 'first\r\nline') +
      part('name="file-1"; filename="dir"', 'application/x-directory', '') +
      part('name="file-2"; filename="dir%2Fa%20name%2C%20%C3%BC.txt"', 'application/octet-stream', 'x'.repeat(5000)) +
      part('name="file-3"; filename="dir/raw path.txt"', 'application/octet-stream', '') +
      part('name="file-4"', 'text/plain', 'a field') +
      '--xyz--\r\nepilogue'
    const seen: [string, string, string, string][] = []
    for await (const p of parseMultipart(chunked(body), TYPE)) seen.push([p.name, p.filename, p.contentType, await text(p.body)])
    expect(seen).to.deep.equal([
      ['file', 'a.txt', 'application/octet-stream', 'first\r\nline'],
      ['file-1', 'dir', 'application/x-directory', ''],
      ['file-2', 'dir%2Fa%20name%2C%20%C3%BC.txt', 'application/octet-stream', 'x'.repeat(5000)],
      ['file-3', 'dir/raw path.txt', 'application/octet-stream', ''],
      ['file-4', '', 'text/plain', 'a field'],
    ])
  })

  it('skips what a consumer left unread of a part and gives the next one', async () => {
    const body = part('name="file"; filename="a"', 'application/octet-stream', 'y'.repeat(200_000)) + part('name="file"; filename="b"', 'application/octet-stream', 'second') + '--xyz--\r\n'
    const names: string[] = []
    let last = ''
    for await (const p of parseMultipart(chunked(body, 4096), TYPE)) {
      names.push(p.filename)
      if (p.filename === 'b') last = await text(p.body)
    }
    expect(names).to.deep.equal(['a', 'b'])
    expect(last).to.equal('second')
  })

  it('streams a part: its first bytes come before the rest of the body has been sent', async () => {
    let sendRest: () => void = () => {}
    const rest = new Promise<void>((res) => (sendRest = res))
    async function* source(): AsyncGenerator<Buffer> {
      yield Buffer.from(`--xyz\r\nContent-Disposition: form-data; name="file"; filename="big"\r\nContent-Type: application/octet-stream\r\n\r\n${'z'.repeat(64 * 1024)}`)
      await rest
      yield Buffer.from(`${'z'.repeat(64 * 1024)}\r\n--xyz--\r\n`)
    }
    let parts: Part[] = []
    let bytes = 0
    for await (const p of parseMultipart(Readable.from(source()), TYPE)) {
      parts = [...parts, p]
      for await (const c of p.body) {
        if (bytes === 0) sendRest()
        bytes += c.byteLength
      }
    }
    expect(parts).to.have.length(1)
    expect(bytes).to.equal(128 * 1024)
  })

  it('refuses what is not a well-formed multipart body, as a bad request', async () => {
    expect((await failure(chunked('x'), 'application/octet-stream')).message).to.match(/expected a multipart\/form-data body/)
    expect((await failure(chunked('x'), '')).message).to.match(/no Content-Type/)
    expect((await failure(chunked('no boundary here at all'))).message).to.match(/unexpected end of body/)
    expect((await failure(chunked('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc'))).message).to.match(/unexpected end of body/)
    expect((await failure(chunked('--xyz\r\nthis is not a header\r\n\r\nabc\r\n--xyz--\r\n'))).message).to.match(/malformed part header/)
    const big = part('name="file"', 'text/plain', 'f'.repeat(1024 * 1024 + 1)) + '--xyz--\r\n'
    expect((await failure(chunked(big, 65536))).message).to.match(/no filename and more than 1048576 bytes/)
    for (const e of [await failure(chunked('x'), 'text/plain')]) expect(e.kind).to.equal('bad-request')
  })

  it('fails the part being read when the source is torn down before its end', async () => {
    async function* source(): AsyncGenerator<Buffer> {
      yield Buffer.from('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nContent-Type: application/octet-stream\r\n\r\nsome')
      throw new Error('socket hang up')
    }
    const err = await failure(Readable.from(source()))
    expect(err.kind).to.equal('bad-request')
  })

  it('ends with no part for a body of only the closing delimiter', async () => {
    const parts: Part[] = []
    for await (const p of parseMultipart(chunked('--xyz--\r\n'), TYPE)) parts.push(p)
    expect(parts).to.deep.equal([])
  })
})
