import { expect } from 'chai'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { KUBO_ADD_DEFAULTS } from '../../../../network/ipfs/add-options.js'
import { IpfsError } from '../../../../network/ipfs/errors.js'
import { ContentStore } from '../../../../network/ipfs/store.js'
import { TempDirs } from '../../../support/db/helpers.js'

/** Following a path in the content store: what each failure to reach a file is called. */
describe('network/ipfs/store: resolving a path', () => {
  const temp = new TempDirs()
  let store: ContentStore
  let dir: CID

  before(async () => {
    store = await ContentStore.open(await temp.make('store-'))
    async function* files() {
      yield { path: 'a.txt', content: new TextEncoder().encode('a') }
    }
    for await (const e of store.add(files(), { ...KUBO_ADD_DEFAULTS, wrapWithDirectory: true })) if (e.directory) dir = e.cid
  })

  after(async () => {
    await store.close()
    await temp.cleanup()
  })

  async function refusal(p: Promise<unknown>): Promise<IpfsError> {
    try {
      await p
    } catch (err) {
      expect(err).to.be.instanceOf(IpfsError)
      return err as IpfsError
    }
    return expect.fail('the path was resolved')
  }

  it('names a directory where a file is needed, a missing link, a missing block and a codec it cannot read', async () => {
    const d = await refusal(store.resolveFile({ cid: dir, segments: [] }))
    expect([d.kind, d.message]).to.deep.equal(['not-a-file', 'this dag node is a directory'])
    const link = await refusal(store.resolve({ cid: dir, segments: ['b.txt'] }))
    expect(link.kind).to.equal('not-found')
    expect(link.message).to.match(new RegExp(`^no link named by path "/ipfs/${dir.toString()}/b.txt": `))
    const absent = CID.createV1(0x55, await sha256.digest(new TextEncoder().encode('never added')))
    const block = await refusal(store.resolve({ cid: absent, segments: [] }))
    expect([block.kind, block.message]).to.deep.equal(['not-found', `block was not found locally (offline): ipld: could not find ${absent.toString()}`])
    // 0x0300 is no codec the exporter has a resolver for.
    const unknown = CID.createV1(0x0300, await sha256.digest(new TextEncoder().encode('x')))
    const codec = await refusal(store.resolve({ cid: unknown, segments: [] }))
    expect([codec.kind, codec.message]).to.deep.equal(['not-a-file', `${unknown.toString()} uses a codec this IPFS cannot read`])
  })
})
