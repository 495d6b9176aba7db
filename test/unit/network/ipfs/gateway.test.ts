import { expect } from 'chai'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { KUBO_ADD_DEFAULTS } from '../../../../network/ipfs/add-options.js'
import { createGatewayApp } from '../../../../network/ipfs/gateway.js'
import { ContentStore } from '../../../../network/ipfs/store.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { localCall } from '../../../support/local-http.js'

/** The read-only gateway over a real content store: what it serves, the ranges it honours, and what it refuses. */
describe('network/ipfs/gateway: GET and HEAD /ipfs/<cid>[/path]', () => {
  const temp = new TempDirs()
  let store: ContentStore
  let server: Server
  let port: number
  const logged: string[] = []
  let dirCid: string
  let fileCid: string
  const TEXT = 'hello gateway!'

  before(async () => {
    store = await ContentStore.open(await temp.make('gateway-'))
    async function* files() {
      yield { path: 'a.txt', content: new TextEncoder().encode(TEXT) }
    }
    const added = []
    for await (const e of store.add(files(), { ...KUBO_ADD_DEFAULTS, wrapWithDirectory: true })) added.push(e)
    fileCid = added.find((e) => e.path === 'a.txt')!.cid.toString()
    dirCid = added.find((e) => e.directory)!.cid.toString()
    server = createGatewayApp({ store, log: (l) => logged.push(l) }).listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    port = (server.address() as AddressInfo).port
  })

  after(async () => {
    await new Promise((resolve) => server.close(resolve))
    await store.close()
    await temp.cleanup()
  })

  const get = (path: string, headers: Record<string, string> = {}) => localCall(port, 'GET', path, undefined, headers)

  it('serves a file by its CID or by a path under a directory, cacheable for good', async () => {
    const r = await get(`/ipfs/${dirCid}/./a.txt`)
    expect([r.status, r.text]).to.deep.equal([200, TEXT])
    const byCid = await get(`/ipfs/${fileCid}`)
    expect(byCid.text).to.equal(TEXT)
  })

  it('answers 304 to the ETag it sent, and a HEAD with the length and no body', async () => {
    const r = await get(`/ipfs/${fileCid}`, { 'if-none-match': `"x", "${fileCid}"` })
    expect([r.status, r.text]).to.deep.equal([304, ''])
    const head = await localCall(port, 'HEAD', `/ipfs/${fileCid}`)
    expect([head.status, head.text]).to.deep.equal([200, ''])
  })

  it('honours one byte range of each form, clamped to the file, and refuses one past its end', async () => {
    const ranged = async (range: string) => {
      const r = await get(`/ipfs/${fileCid}`, { range })
      return [r.status, r.text]
    }
    expect(await ranged('bytes=2-4')).to.deep.equal([206, 'llo'])
    expect(await ranged('bytes=6-')).to.deep.equal([206, 'gateway!'])
    expect(await ranged('bytes=-3')).to.deep.equal([206, 'ay!'])
    expect(await ranged('bytes=-100')).to.deep.equal([206, TEXT])
    expect(await ranged('bytes=10-100')).to.deep.equal([206, 'way!'])
    // Ranges it does not take are ignored: the whole file.
    expect(await ranged('bytes=5-2')).to.deep.equal([200, TEXT])
    expect(await ranged('bytes=-')).to.deep.equal([200, TEXT])
    expect(await ranged('items=1-2')).to.deep.equal([200, TEXT])
    expect(await ranged('bytes=100-')).to.deep.equal([416, 'Range Not Satisfiable'])
    expect(await ranged('bytes=-0')).to.deep.equal([416, 'Range Not Satisfiable'])
  })

  it('refuses what it does not serve, in plain text with the status of each', async () => {
    const cases: [string, string, number, RegExp][] = [
      ['GET', '/elsewhere', 404, /^not found: this gateway serves \/ipfs\/<cid>\[\/path\] only$/],
      ['POST', `/ipfs/${fileCid}`, 405, /^method not allowed: this gateway is read-only$/],
      ['GET', '/ipfs/%E0%A4%A', 400, /bad percent-encoding$/],
      ['GET', '/ipfs/', 400, /no CID$/],
      ['GET', '/ipfs/not-a-cid', 400, /not-a-cid/],
      ['GET', `/ipfs/${dirCid}`, 501, /is a directory; this gateway serves files only$/],
      ['GET', `/ipfs/${dirCid}/b.txt`, 404, /^no link named by path/],
    ]
    for (const [method, path, status, text] of cases) {
      const r = await localCall(port, method, path)
      expect([method, path, r.status]).to.deep.equal([method, path, status])
      expect(r.text.trimEnd()).to.match(text)
    }
    const post = await localCall(port, 'POST', `/ipfs/${fileCid}`)
    expect(post.allow).to.equal('GET, HEAD')
    // Refusals are the client's: nothing is logged.
    expect(logged).to.deep.equal([])
  })
})
