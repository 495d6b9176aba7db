import { expect } from 'chai'
import { create, type AddOptions, type KuboRPCClient } from 'kubo-rpc-client'
import { collect, kuboDeterministicBytes, removeIfPassed, startIpfsProcess, stopIpfsProcess, tempDir, type IpfsProcess } from '../support/ipfs.js'

/**
 * CIDs that Kubo itself produces with its default `ipfs add` settings, each from Kubo's own tests or docs, so that
 * equality here means "the same CID any Kubo gives these bytes".
 */
describe('local IPFS: CIDs equal Kubo\'s', function () {
  this.timeout(60_000)
  const dir = tempDir('ipfs-cids')
  let ipfs: IpfsProcess | undefined
  let client: KuboRPCClient

  before(async () => {
    ipfs = await startIpfsProcess(dir)
    client = create({ url: ipfs.api })
  })
  after(async function () {
    await stopIpfsProcess(ipfs)
    removeIfPassed(this, [dir])
  })

  const addText = async (text: string, options: AddOptions = {}): Promise<string> =>
    (await client.add(Buffer.from(text), options)).cid.toString()

  it('empty file (kubo test/sharness/t0040-add-and-cat.sh, "zero length file has correct hash")', async () => {
    expect(await addText('')).to.equal('QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH')
  })

  it('"hello world\\n" (the go-ipfs README: echo "hello world" > hello; ipfs add hello)', async () => {
    expect(await addText('hello world\n')).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
  })

  it('"hello world" with default, CIDv1 and CIDv1 without raw leaves (kubo test/cli/add_test.go shortString*)', async () => {
    expect(await addText('hello world')).to.equal('Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD')
    expect(await addText('hello world', { cidVersion: 1 })).to.equal('bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e')
    expect(await addText('hello world', { cidVersion: 1, rawLeaves: false })).to.equal(
      'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa',
    )
  })

  it('two files in one add, each reported under its name (t0040 "ipfs add with multiple files")', async () => {
    const out = []
    for await (const r of client.addAll([
      { path: 'hello.txt', content: Buffer.from('Hello Worlds!\n') },
      { path: 'hello2.txt', content: Buffer.from('Helloo Worlds!\n') },
    ])) {
      out.push({ path: r.path, cid: r.cid.toString() })
    }
    expect(out).to.deep.equal([
      { path: 'hello.txt', cid: 'QmVr26fY1tKyspEJBniVhqxQeEjhF78XerGiqWAwraVLQH' },
      { path: 'hello2.txt', cid: 'Qmf35k66MZNW2GijohUmXQEWKZU4cCGTCwK6idfnt152wJ' },
    ])
  })

  // kubo test/cli/add_test.go ("legacy-cid-v0 ... UnixFSFileMaxLinks") and test/cli/cid_profiles_test.go (unixfsV02015,
  // the profile Kubo uses by default): DeterministicRandomReader with seed "v0-seed"; also in js-ipfs-unixfs's
  // packages/ipfs-unixfs-importer/test/ipip-499-profiles.spec.ts for the first one.
  it('44544 KiB = 174 chunks: one full layer of links', async () => {
    const r = await client.add(kuboDeterministicBytes(174 * 262_144, 'v0-seed'))
    expect(r.cid.toString()).to.equal('QmUbBALi174SnogsUzLpYbD4xPiBSFANF4iztWCsHbMKh2')
  })

  it('44800 KiB = 175 chunks: the balanced layout adds a level (2 root links)', async () => {
    const r = await client.add(kuboDeterministicBytes(175 * 262_144, 'v0-seed'))
    expect(r.cid.toString()).to.equal('QmepeWtdmS1hHXx1oZXsPUv6bMrfRRKfZcoPPU4eEfjnbf')
  })

  it('honours chunker=size-N (different CID, same bytes back)', async () => {
    const data = Buffer.alloc(10_000, 7)
    const small = await client.add(data, { chunker: 'size-1000' })
    const whole = await client.add(data)
    expect(small.cid.toString()).to.not.equal(whole.cid.toString())
    expect(Buffer.compare(await collect(client.cat(small.cid)), data)).to.equal(0)
  })

  it('only-hash computes the CID without storing the content', async () => {
    const r = await client.add(Buffer.from(`only-hash ${Date.now()} ${Math.random()}`), { onlyHash: true })
    let failure: unknown
    try {
      await collect(client.cat(r.cid))
    } catch (err) {
      failure = err
    }
    expect(String(failure)).to.match(/not found locally/)
  })

  it('refuses options whose CIDs it cannot reproduce, with a 400 in Kubo\'s error shape', async () => {
    for (const query of ['chunker=rabin', 'chunker=size-2000000', 'hash=blake2b-256', 'trickle=true', 'cid-version=2']) {
      const res = await fetch(`${ipfs?.api}/api/v0/add?${query}`, {
        method: 'POST',
        headers: { 'Content-Type': 'multipart/form-data; boundary=b' },
        body: '--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nx\r\n--b--\r\n',
      })
      expect(res.status, query).to.equal(400)
      const body = (await res.json()) as { Message: string; Code: number; Type: string }
      expect(body.Type, query).to.equal('error')
      expect(body.Message, query).to.be.a('string').and.not.equal('')
    }
  })
})
