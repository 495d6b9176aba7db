import { expect } from 'chai'
import { kuboAdd, kuboApiUrl } from '../../../../node/storage/kubo-add.js'
import { bodyOf, ScriptedServer } from '../../../support/scripted-server.js'
import { waitUntil } from '../../../support/wait.js'

/** Kubo's `add` as the node calls it, against a loopback server playing the daemon: what is sent, and each bad answer. */
describe('storage: Kubo add', () => {
  let kubo: ScriptedServer

  before(async () => {
    kubo = await ScriptedServer.start()
  })
  after(() => kubo.stop())
  beforeEach(() => {
    kubo.requests.length = 0
  })

  const failure = (p: Promise<unknown>): Promise<Error> =>
    p.then(
      () => {
        throw new Error('expected a rejection')
      },
      (e: unknown) => e as Error,
    )

  /** Content that yields `n` chunks of 64 KiB on demand and says how many were taken and whether it was closed. */
  function chunks(n: number) {
    const state = { taken: 0, closed: false }
    async function* gen(): AsyncGenerator<Uint8Array> {
      try {
        for (let i = 0; i < n; i++) {
          state.taken++
          yield new Uint8Array(64 * 1024).fill(i % 256)
        }
      } finally {
        state.closed = true
      }
    }
    return { content: gen(), state }
  }

  it('makes the call URL with or without the API\'s trailing slash', () => {
    expect(kuboApiUrl('http://127.0.0.1:5001', 'add').href).to.equal('http://127.0.0.1:5001/api/v0/add')
    expect(kuboApiUrl('http://127.0.0.1:5001/', 'version').href).to.equal('http://127.0.0.1:5001/api/v0/version')
  })

  it('posts one multipart file with its options and a name without its path, and answers the last entry\'s CID', async () => {
    let received: { url: string; type: string; body: string } | undefined
    kubo.handler = async (req, res) => {
      received = { url: req.url!, type: String(req.headers['content-type']), body: (await bodyOf(req)).toString() }
      // Progress lines carry no Hash; a wrapping entry would come last.
      res.end('{"Name":"a","Bytes":5}\n{"Name":"a","Hash":"QmFirst"}\n\n{"Name":"","Hash":"QmRoot"}\n')
    }
    expect(await kuboAdd(kubo.url, new TextEncoder().encode('hello'), 'dir/a b.txt', { 'cid-version': '0', pin: 'true' })).to.equal('QmRoot')
    expect(received!.url).to.equal('/api/v0/add?cid-version=0&pin=true')
    const boundary = /^multipart\/form-data; boundary=(parley-[0-9a-f-]{36})$/.exec(received!.type)?.[1]
    expect(boundary, received!.type).to.be.a('string')
    expect(received!.body).to.equal(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="dir_a%20b.txt"\r\nContent-Type: application/octet-stream\r\n\r\nhello\r\n--${boundary}--\r\n`)
  })

  it('streams content given as chunks, every one of them', async () => {
    let size = 0
    kubo.handler = async (req, res) => {
      size = (await bodyOf(req)).length
      res.end('{"Hash":"QmBig"}')
    }
    const { content, state } = chunks(40)
    expect(await kuboAdd(kubo.url, content, 'big.bin', {})).to.equal('QmBig')
    expect(state).to.deep.equal({ taken: 40, closed: true })
    expect(size).to.be.above(40 * 64 * 1024)
  })

  it('rejects an answer other than 200 with its status and text, and stops taking the content', async () => {
    kubo.handler = (_req, res) => res.writeHead(500, { connection: 'close' }).end('{"Message":"no space left on device"}')
    const { content, state } = chunks(100_000)
    const err = await failure(kuboAdd(kubo.url, content, 'f', {}))
    expect(err.message).to.equal('ipfs add answered 500: {"Message":"no space left on device"}')
    await waitUntil('the content is closed', () => state.closed, { intervalMs: 5 })
    expect(state.taken, 'chunks taken of 100,000').to.be.below(1000)
  })

  it('rejects an answer with a line that is not JSON, or with no CID', async () => {
    kubo.handler = (_req, res) => res.end('{"Hash":"QmA"}\n<html>proxy error</html>\n')
    expect((await failure(kuboAdd(kubo.url, new Uint8Array(1), 'f', {}))).message).to.equal('ipfs add answered a line that is not JSON: <html>proxy error</html>')
    kubo.handler = (_req, res) => res.end('{"Name":"f","Bytes":1}\n{"Hash":42}\n')
    expect((await failure(kuboAdd(kubo.url, new Uint8Array(1), 'f', {}))).message).to.equal('ipfs add answered no CID: {"Name":"f","Bytes":1}\n{"Hash":42}\n')
  })

  it('rejects when the daemon drops the connection in the middle of the upload, and closes the content', async () => {
    kubo.handler = (req) => req.once('data', () => req.socket.destroy())
    const { content, state } = chunks(100_000)
    const err = await failure(kuboAdd(kubo.url, content, 'f', {}))
    expect(err.message).to.match(/ECONNRESET|EPIPE|socket hang up|the connection closed while sending|the request was abandoned/)
    await waitUntil('the content is closed', () => state.closed, { intervalMs: 5 })
    expect(state.taken).to.be.below(100_000)
  })

  it('rejects with the content\'s own failure, an Error or not', async () => {
    kubo.handler = async (req, res) => {
      await bodyOf(req).catch(() => {})
      res.end('{"Hash":"QmNever"}')
    }
    async function* failing(thrown: unknown): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(10)
      throw thrown
    }
    expect((await failure(kuboAdd(kubo.url, failing(new Error('the blob file was removed')), 'f', {}))).message).to.equal('the blob file was removed')
    expect((await failure(kuboAdd(kubo.url, failing('gone'), 'f', {}))).message).to.equal('gone')
  })
})
