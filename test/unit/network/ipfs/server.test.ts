import { expect } from 'chai'
import { createServer, type Server } from 'node:net'
import { startIpfs, type IpfsServer } from '../../../../network/ipfs/server.js'
import { PortBusyError } from '../../../../network/process.js'
import { TempDirs } from '../../../support/db/helpers.js'

/** The local IPFS started in this process: Kubo's add with directories and progress, cat across files, id, a busy port. */
describe('network/ipfs/server: the Kubo RPC subset in process', () => {
  const temp = new TempDirs()
  let ipfs: IpfsServer
  const logged: string[] = []

  before(async () => {
    ipfs = await startIpfs({ dir: await temp.make('ipfs-'), apiPort: 0, gatewayPort: 0, log: (l) => logged.push(l) })
  })

  after(async () => {
    await ipfs.close()
    await temp.cleanup()
  })

  async function add(query: string, parts: { name: string; content?: string }[]): Promise<{ status: number; lines: Record<string, unknown>[] }> {
    const form = new FormData()
    for (const p of parts) {
      if (p.content === undefined) form.append('file', new Blob([], { type: 'application/x-directory' }), p.name)
      else form.append('file', new Blob([p.content], { type: 'application/octet-stream' }), p.name)
    }
    const r = await fetch(`${ipfs.api}/api/v0/add?${query}`, { method: 'POST', body: form })
    const text = await r.text()
    return { status: r.status, lines: text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) }
  }

  it('adds a directory with its files, naming each as sent (an undecodable name as it is), with progress lines when asked', async () => {
    const r = await add('progress=true', [{ name: 'docs' }, { name: 'docs%2Fa.txt', content: 'alpha' }, { name: 'docs/%E0%A4.txt', content: 'beta' }])
    expect(r.status).to.equal(200)
    const named = r.lines.filter((l) => 'Hash' in l).map((l) => l.Name)
    expect(named).to.deep.equal(['docs/a.txt', 'docs/%E0%A4.txt', 'docs'])
    expect(r.lines.filter((l) => !('Hash' in l)).map((l) => [l.Name, l.Bytes])).to.deep.include.members([['docs/a.txt', 5]])
  })

  it('refuses an add with no file, before answering anything', async () => {
    const r = await fetch(`${ipfs.api}/api/v0/add`, { method: 'POST', body: new FormData() })
    expect(r.status).to.equal(400)
    expect(await r.json()).to.deep.equal({ Message: 'argument "path" is required', Code: 1, Type: 'error' })
  })

  it('cats several files as one stream, from an offset past the first one', async () => {
    const one = await add('', [{ name: 'one', content: 'first' }])
    const two = await add('', [{ name: 'two', content: 'second' }])
    const [a, b] = [one.lines[0]!.Hash, two.lines[0]!.Hash] as string[]
    const r = await fetch(`${ipfs.api}/api/v0/cat?arg=${a}&arg=${b}&offset=7&length=3`, { method: 'POST' })
    expect([r.status, r.headers.get('x-content-length'), await r.text()]).to.deep.equal([200, '3', 'con'])
    const whole = await fetch(`${ipfs.api}/api/v0/cat?arg=${a}&arg=${b}&offset=2`, { method: 'POST' })
    expect(await whole.text()).to.equal('rstsecond')
  })

  it('answers its own id, and refuses to look up another peer', async () => {
    const self = (await (await fetch(`${ipfs.api}/api/v0/id`, { method: 'POST' })).json()) as { ID: string }
    expect((await (await fetch(`${ipfs.api}/api/v0/id?arg=${self.ID}`, { method: 'POST' })).json()) as { ID: string }).to.deep.include({ ID: self.ID })
    const other = await fetch(`${ipfs.api}/api/v0/id?arg=12D3KooWOther`, { method: 'POST' })
    expect(other.status).to.be.within(400, 599)
    expect(((await other.json()) as { Message: string }).Message).to.equal('cannot look up peer 12D3KooWOther: this IPFS is offline and knows only itself')
    expect(logged).to.deep.equal([])
  })

  it('names a busy port', async () => {
    const busy: Server = createServer().listen(0, '127.0.0.1')
    await new Promise((resolve) => busy.once('listening', resolve))
    const port = (busy.address() as { port: number }).port
    try {
      await startIpfs({ dir: await temp.make('ipfs-busy-'), apiPort: port, gatewayPort: 0, log: () => {} }).then(
        async (s) => {
          await s.close()
          expect.fail('started on a busy port')
        },
        (err: Error) => {
          expect(err).to.be.instanceOf(PortBusyError)
          expect(err.message).to.equal(`port ${port} (ipfs api) is already in use on 127.0.0.1`)
        },
      )
    } finally {
      await new Promise((resolve) => busy.close(resolve))
    }
  })
})
