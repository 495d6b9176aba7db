import { strict as assert } from 'node:assert'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { FsBlockstore } from 'blockstore-fs'
import { sha256 } from 'multiformats/hashes/sha2'
import { LocalBlocks } from '../../network/ipfs/blocks.js'

const DAG_PB = 0x70

async function rawBlock(bytes: Uint8Array): Promise<CID> {
  return CID.createV1(raw.code, await sha256.digest(bytes))
}

describe('IPFS local blocks', () => {
  let dir: string
  let blocks: LocalBlocks

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'parley-blocks-'))
    blocks = await LocalBlocks.open(dir)
  })
  afterEach(async () => {
    await blocks.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('reads a block back whole, in one piece, however large (the exporter joins pieces by copying)', async () => {
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 251)
    const cid = await rawBlock(bytes)
    await blocks.put(cid, bytes)
    const pieces: Uint8Array[] = []
    for await (const piece of blocks.get(cid)) pieces.push(piece)
    assert.equal(pieces.length, 1)
    assert.deepEqual(Buffer.from(pieces[0]!), Buffer.from(bytes))
    assert.equal(await blocks.has(cid), true)
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
      assert.deepEqual(answered.map(String), [v0.toString(), v1.toString()])
    } finally {
      FsBlockstore.prototype.put = originalPut
    }
    assert.equal(writes, 1)
    for (const cid of [v0, v1]) {
      const pieces: Uint8Array[] = []
      for await (const piece of blocks.get(cid)) pieces.push(piece)
      assert.deepEqual(Buffer.concat(pieces), Buffer.from(bytes))
    }
  })

  it('a block it does not hold fails at once with the offline message naming it', async () => {
    const cid = await rawBlock(new Uint8Array([1, 2, 3]))
    await assert.rejects(
      async () => {
        for await (const _ of blocks.get(cid)) assert.fail('no piece expected')
      },
      (err: Error) => err.message === `block was not found locally (offline): ipld: could not find ${cid.toString()}`,
    )
  })

  it('an aborted read fails as a missing block, as blockstore-fs did', async () => {
    const bytes = new Uint8Array([9, 9, 9])
    const cid = await rawBlock(bytes)
    await blocks.put(cid, bytes)
    const controller = new AbortController()
    controller.abort()
    await assert.rejects(async () => {
      for await (const _ of blocks.get(cid, { signal: controller.signal })) assert.fail('no piece expected')
    }, /not found locally/)
  })
})
