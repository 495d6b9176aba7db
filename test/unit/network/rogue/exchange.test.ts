import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { hashOf, uniqueContent } from '../../../../network/rogue/exchange.js'

describe('network/rogue/exchange: the content of flooded blobs', () => {
  const bytes = async (c: AsyncIterable<Uint8Array>): Promise<Buffer> => {
    const parts: Uint8Array[] = []
    for await (const p of c) parts.push(p)
    return Buffer.concat(parts)
  }

  it('is exactly the size asked, the same at every read, and hashed as sha256', async () => {
    const c = uniqueContent(200_000)
    const first = await bytes(c)
    expect(first.length).to.equal(200_000)
    expect((await bytes(c)).equals(first)).to.equal(true)
    expect(await hashOf(c)).to.equal(createHash('sha256').update(first).digest('hex'))
  })

  it('differs from one blob to the next', async () => {
    expect(await hashOf(uniqueContent(1000))).to.not.equal(await hashOf(uniqueContent(1000)))
  })
})
