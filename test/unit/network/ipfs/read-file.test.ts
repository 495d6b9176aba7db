import { expect } from 'chai'
import type { CID } from 'multiformats/cid'
import { KUBO_ADD_DEFAULTS } from '../../../../network/ipfs/add-options.js'
import { LocalBlocks } from '../../../../network/ipfs/blocks.js'
import { ContentStore } from '../../../../network/ipfs/store.js'
import { TempDirs } from '../../../support/db/helpers.js'

/**
 * Reading a file's bytes from its DAG (network/ipfs/read-file.ts), through the content store: a range reads only the
 * leaves it overlaps, and a DAG whose leaves disagree with its root fails rather than pass for the file.
 */
describe('network/ipfs/read-file: a file\'s bytes from its DAG', () => {
  const temp = new TempDirs()
  const CHUNK = 1024
  // Three leaves: 1024, 1024 and 952 bytes, each byte its position mod 251.
  const content = Uint8Array.from({ length: 3000 }, (_, i) => i % 251)
  let source: string
  let root: CID
  let leaves: CID[]
  let directory: CID

  async function bytesOf(store: ContentStore, cid: CID, offset?: bigint, length?: bigint): Promise<Uint8Array> {
    const entry = await store.resolveFile({ cid, segments: [] })
    const parts: Uint8Array[] = []
    for await (const p of store.read(entry, offset, length)) parts.push(p)
    return Uint8Array.from(parts.flatMap((p) => [...p]))
  }

  async function failure(p: Promise<unknown>): Promise<string> {
    try {
      await p
    } catch (err) {
      return (err as Error).message
    }
    return expect.fail('the read did not fail')
  }

  before(async () => {
    source = await temp.make('read-file-')
    const store = await ContentStore.open(source)
    async function* files() {
      yield { path: 'f.bin', content }
    }
    const added = []
    for await (const e of store.add(files(), { ...KUBO_ADD_DEFAULTS, chunkSize: CHUNK, wrapWithDirectory: true })) added.push(e)
    root = added.find((e) => e.path === 'f.bin')!.cid
    directory = added.find((e) => e.directory)!.cid
    const entry = await store.resolveFile({ cid: root, segments: [] })
    if (entry.type !== 'file') throw new Error('expected a file node')
    leaves = entry.node.Links.map((l) => l.Hash)
    await store.close()
  })

  after(() => temp.cleanup())

  /** A store holding the file's blocks, with the block of a leaf replaced by another block's bytes. */
  async function storeWithLeaf(index: number, replacement: CID): Promise<ContentStore> {
    const from = await LocalBlocks.open(source)
    const dir = await temp.make('read-file-copy-')
    const to = await LocalBlocks.open(dir)
    const bytes = async (cid: CID): Promise<Uint8Array> => {
      const parts: Uint8Array[] = []
      for await (const p of from.get(cid)) parts.push(p)
      return Uint8Array.from(parts.flatMap((p) => [...p]))
    }
    await to.put(root, await bytes(root))
    for (const [i, leaf] of leaves.entries()) await to.put(leaf, await bytes(i === index ? replacement : leaf))
    await from.close()
    await to.close()
    return ContentStore.open(dir)
  }

  it('reads the whole file, a range within one leaf, a range clamped to the end, and nothing past it', async () => {
    const store = await ContentStore.open(source)
    try {
      expect(leaves).to.have.length(3)
      expect(await bytesOf(store, root)).to.deep.equal(content)
      expect(await bytesOf(store, root, 1030n, 10n)).to.deep.equal(content.subarray(1030, 1040))
      expect(await bytesOf(store, root, 2990n, 100n)).to.deep.equal(content.subarray(2990))
      expect(await bytesOf(store, root, 5000n)).to.deep.equal(new Uint8Array())
      expect(await bytesOf(store, root, 10n, 0n)).to.deep.equal(new Uint8Array())
    } finally {
      await store.close()
    }
  })

  it('fails when the leaves hold fewer bytes than the root declares', async () => {
    const store = await storeWithLeaf(1, leaves[2]!)
    try {
      expect(await failure(bytesOf(store, root))).to.equal(`corrupt DAG under ${root.toString()}: expected 3000 bytes, read 2928`)
      // A range that does not reach the short leaf reads as it should.
      expect(await bytesOf(store, root, 0n, 100n)).to.deep.equal(content.subarray(0, 100))
    } finally {
      await store.close()
    }
  })

  it('fails when a link of the file leads to a directory', async () => {
    const store = await storeWithLeaf(1, directory)
    try {
      expect(await failure(bytesOf(store, root))).to.equal(`corrupt DAG: ${leaves[1]!.toString()} is a directory inside a file`)
    } finally {
      await store.close()
    }
  })
})
