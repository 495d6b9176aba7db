import { CID } from 'multiformats/cid'
import { IpfsError, errorMessage } from './errors.js'

/** A content path: a root CID and the names to follow below it (empty for the root itself). */
export interface IpfsPath {
  cid: CID
  segments: string[]
}

/**
 * Parses what Kubo accepts as an `ipfs-path` argument: `<cid>`, `<cid>/a/b` or `/ipfs/<cid>/a/b`.
 * Segments arrive already decoded (query argument or decoded URL segments).
 */
export function parseIpfsPath(input: string): IpfsPath {
  let rest = input.trim()
  if (rest.startsWith('/ipfs/')) rest = rest.slice('/ipfs/'.length)
  else if (rest.startsWith('/')) {
    // /ipns/ and friends need a network and a name system; say so instead of failing on the CID.
    throw new IpfsError('bad-request', `invalid path "${input}": only /ipfs/ paths are supported`)
  }
  const [first = '', ...segments] = rest.split('/')
  if (first === '') throw new IpfsError('bad-request', `invalid path "${input}": no CID`)
  return { cid: parseCid(first, input), segments: segments.filter((s) => s !== '' && s !== '.') }
}

export function parseCid(text: string, context = text): CID {
  try {
    return CID.parse(text)
  } catch (err) {
    throw new IpfsError('bad-request', `invalid path "${context}": "${text}" is not a valid CID (${errorMessage(err)})`)
  }
}

/** The canonical text of a path, as Kubo prints it in `X-Ipfs-Path`. */
export function formatIpfsPath(p: IpfsPath): string {
  return ['/ipfs', p.cid.toString(), ...p.segments.map(encodeURIComponent)].join('/')
}
