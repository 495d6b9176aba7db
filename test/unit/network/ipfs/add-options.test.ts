import { expect } from 'chai'
import { KUBO_ADD_DEFAULTS, parseAddSettings } from '../../../../network/ipfs/add-options.js'
import { IpfsError } from '../../../../network/ipfs/errors.js'

/** Kubo's `add` query options as the local IPFS reads them: what it takes, and what it refuses rather than ignore. */
describe('network/ipfs/add-options: Kubo\'s add options', () => {
  const parse = (query: string) => parseAddSettings(new URLSearchParams(query))

  function refusal(query: string): IpfsError {
    try {
      parse(query)
    } catch (err) {
      expect(err).to.be.instanceOf(IpfsError)
      return err as IpfsError
    }
    return expect.fail(`?${query} was not refused`)
  }

  it('takes Kubo\'s defaults, and each option under its long name or its alias', () => {
    expect(parse('')).to.deep.equal(KUBO_ADD_DEFAULTS)
    expect(parse('cid-version=1&s=size-1024&max-file-links=2&w&n=true&p=1&pin=false&hash=sha2-256&t=false&inline=0&nocopy=F')).to.deep.equal({
      cidVersion: 1,
      rawLeaves: true,
      chunkSize: 1024,
      maxChildrenPerNode: 2,
      wrapWithDirectory: true,
      onlyHash: true,
      progress: true,
    })
    // CIDv1 implies raw leaves only when raw-leaves is not given; the default chunker by name.
    expect(parse('cid-version=1&raw-leaves=False&chunker=default')).to.deep.include({ rawLeaves: false, chunkSize: KUBO_ADD_DEFAULTS.chunkSize })
    expect(parse('raw-leaves=TRUE&chunker=')).to.deep.include({ cidVersion: 0, rawLeaves: true })
  })

  it('refuses malformed values as bad requests', () => {
    for (const [query, message] of [
      ['raw-leaves=yes', 'invalid value "yes" for boolean option "raw-leaves"'],
      ['cid-version=x', 'invalid value "x" for option "cid-version": expected an integer'],
      ['cid-version=2', 'option "cid-version" must be between 0 and 1, got 2'],
      ['chunker=size-0', 'option "chunker" must be between 1 and 1048576, got 0'],
      ['chunker=size-1048577', 'option "chunker" must be between 1 and 1048576, got 1048577'],
      ['max-file-links=1', 'option "max-file-links" must be between 2 and 65536, got 1'],
    ] as const) {
      const err = refusal(query)
      expect([query, err.kind, err.message]).to.deep.equal([query, 'bad-request', message])
    }
  })

  it('refuses what would give a CID other than Kubo\'s as unsupported', () => {
    for (const [query, message] of [
      ['hash=blake2b-256', 'hash function "blake2b-256" is not supported here: only sha2-256'],
      ['trickle', 'the trickle layout is not supported here'],
      ['t=true', 'the trickle layout is not supported here'],
      ['inline=1', 'inline blocks are not supported here'],
      ['nocopy', 'the filestore (nocopy) is not supported here'],
      ['chunker=rabin-262144', 'chunker "rabin-262144" is not supported here: only size-<bytes> (fixed-size chunks)'],
    ] as const) {
      const err = refusal(query)
      expect([query, err.kind, err.message]).to.deep.equal([query, 'unsupported', message])
    }
  })
})
