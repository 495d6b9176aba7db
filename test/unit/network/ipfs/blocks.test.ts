import { expect } from 'chai'
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { FsBlockstore } from 'blockstore-fs'
import { sha256 } from 'multiformats/hashes/sha2'
import { LocalBlocks } from '../../../../network/ipfs/blocks.js'
import { TempDirs } from '../../../support/db/helpers.js'

const DAG_PB = 0x70

async function rawBlock(bytes: Uint8Array): Promise<CID> {
  return CID.createV1(raw.code, await sha256.digest(bytes))
}

/** Every piece `get` yields for `cid`, in order. */
async function piecesOf(blocks: LocalBlocks, cid: CID, options?: { signal: AbortSignal }): Promise<Uint8Array[]> {
  const pieces: Uint8Array[] = []
  for await (const piece of blocks.get(cid, options)) pieces.push(piece)
  return pieces
}

/** The error reading `cid` fails with; a piece read before it, or no failure, fails the test. */
async function readFailure(blocks: LocalBlocks, cid: CID, options?: { signal: AbortSignal }): Promise<Error> {
  try {
    for await (const _ of blocks.get(cid, options)) expect.fail('no piece expected')
  } catch (err) {
    return err as Error
  }
  expect.fail('a failure expected')
}

describe('IPFS local blocks', () => {
  const dirs = new TempDirs()
  let blocks: LocalBlocks

  beforeEach(async () => {
    blocks = await LocalBlocks.open(await dirs.make('parley-blocks-'))
  })
  afterEach(async () => {
    await blocks.close()
    await dirs.cleanup()
  })

  it('reads a block back whole, in one piece, however large (the exporter joins pieces by copying)', async () => {
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 251)
    const cid = await rawBlock(bytes)
    await blocks.put(cid, bytes)
    const pieces = await piecesOf(blocks, cid)
    expect(pieces.length).to.equal(1)
    expect(Buffer.from(pieces[0]!).equals(Buffer.from(bytes))).to.equal(true)
    expect(await blocks.has(cid)).to.equal(true)
  })

  it('one write for a CIDv0 and a CIDv1 of the same bytes put at once (one file), each caller answered with its own CID', async () => {
    // The store does not decode blocks: any bytes do under the dag-pb codec a CIDv0 implies.
    const bytes = new Uint8Array([10, 3, 1, 2, 3])
    const digest = await sha256.digest(bytes)
    const v0 = CID.createV0(digest)
    const v1 = CID.createV1(DAG_PB, digest)
    const originalPut = FsBlockstore.prototype.put
    let writes = 0
    FsBlockstore.prototype.put = function (this: FsBlockstore, ...args: Parameters<FsBlockstore['put']>) {
      writes++
      return originalPut.apply(this, args)
    }
    try {
      const answered = await Promise.all([blocks.put(v0, bytes), blocks.put(v1, bytes)])
      expect(answered.map(String)).to.deep.equal([v0.toString(), v1.toString()])
    } finally {
      FsBlockstore.prototype.put = originalPut
    }
    expect(writes).to.equal(1)
    for (const cid of [v0, v1]) expect(Buffer.concat(await piecesOf(blocks, cid)).equals(Buffer.from(bytes))).to.equal(true)
  })

  it('a block it does not hold fails at once with the offline message naming it', async () => {
    const cid = await rawBlock(new Uint8Array([1, 2, 3]))
    const err = await readFailure(blocks, cid)
    expect(err.message).to.equal(`block was not found locally (offline): ipld: could not find ${cid.toString()}`)
  })

  it('an aborted read fails as a missing block, as blockstore-fs did', async () => {
    const bytes = new Uint8Array([9, 9, 9])
    const cid = await rawBlock(bytes)
    await blocks.put(cid, bytes)
    const controller = new AbortController()
    controller.abort()
    const err = await readFailure(blocks, cid, { signal: controller.signal })
    expect(err.message).to.match(/not found locally/)
  })
})

describe('IPFS local blocks held in memory', () => {
  const dirs = new TempDirs()
  let blocks: LocalBlocks
  let path: string

  beforeEach(async () => {
    path = await dirs.make('parley-blocks-')
    blocks = await LocalBlocks.open(path)
  })
  afterEach(async () => {
    await blocks.close()
    await dirs.cleanup()
  })

  /** The block files under the store, by name. */
  function blockFiles(): string[] {
    return readdirSync(path, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name))
  }

  it('serves a block written lately from memory, and one past 256 KiB from its file', async () => {
    const small = new Uint8Array(1_000).map((_, i) => i % 7)
    const large = new Uint8Array(300_000).map((_, i) => i % 11)
    const [smallCid, largeCid] = [await rawBlock(small), await rawBlock(large)]
    await blocks.put(smallCid, small)
    await blocks.put(largeCid, large)
    // Gone from the disk: only what is held in memory can still be read.
    for (const file of blockFiles()) rmSync(file)
    expect(Buffer.concat(await piecesOf(blocks, smallCid)).equals(Buffer.from(small))).to.equal(true)
    expect((await readFailure(blocks, largeCid)).message).to.match(/not found locally/)
  })

  it('keeps the 8 MiB used last, a block read from its file among them', async () => {
    const first = new Uint8Array(200_000).fill(1)
    const firstCid = await rawBlock(first)
    await blocks.put(firstCid, first)
    const reopened = await LocalBlocks.open(path)
    try {
      // Read from its file by a store that did not write it, then held.
      expect(Buffer.concat(await piecesOf(reopened, firstCid)).equals(Buffer.from(first))).to.equal(true)
      const later: CID[] = []
      // 44 more blocks of 200,000 bytes: 9 MB in all, past what is held, the first read again halfway.
      for (let i = 0; i < 44; i++) {
        const bytes = new Uint8Array(200_000).fill(i + 2)
        later.push(await rawBlock(bytes))
        await reopened.put(later[i]!, bytes)
        if (i === 22) await piecesOf(reopened, firstCid)
      }
      for (const file of blockFiles()) rmSync(file)
      expect((await piecesOf(reopened, firstCid)).length, 'the block read again halfway').to.equal(1)
      expect((await readFailure(reopened, later[0]!)).message, 'the oldest block not read since').to.match(/not found locally/)
      expect((await piecesOf(reopened, later[43]!)).length, 'the last block written').to.equal(1)
    } finally {
      await reopened.close()
    }
  })

  it('holds a copy of a block that is a view into a larger buffer, not the buffer (a chunker slices socket reads)', async () => {
    const read = new Uint8Array(1024 * 1024).fill(5)
    const view = read.subarray(0, 100)
    const cid = await rawBlock(view)
    await blocks.put(cid, view)
    for (const file of blockFiles()) rmSync(file)
    const [held] = await piecesOf(blocks, cid)
    expect(Buffer.from(held!).equals(Buffer.from(view))).to.equal(true)
    expect(held!.buffer.byteLength, 'the block alone is kept alive').to.equal(100)
  })
})
