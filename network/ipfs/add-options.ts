import { IpfsError } from './errors.js'

/**
 * The `ipfs add` settings this IPFS honours. The defaults are Kubo's own `ipfs add` defaults (the
 * unixfs-v0-2015 profile, Kubo's implicit default), so the same bytes get the CID any Kubo would give them.
 */
export interface AddSettings {
  cidVersion: 0 | 1
  rawLeaves: boolean
  chunkSize: number
  maxChildrenPerNode: number
  wrapWithDirectory: boolean
  onlyHash: boolean
  progress: boolean
}

export const KUBO_ADD_DEFAULTS: Readonly<AddSettings> = Object.freeze({
  cidVersion: 0,
  rawLeaves: false,
  chunkSize: 262_144,
  maxChildrenPerNode: 174,
  wrapWithDirectory: false,
  onlyHash: false,
  progress: false,
})

/** Kubo refuses chunks above 1 MiB (its maximum block size); so do we. */
const MAX_CHUNK_SIZE = 1_048_576

function bad(message: string): never {
  throw new IpfsError('bad-request', message)
}

function unsupported(message: string): never {
  throw new IpfsError('unsupported', message)
}

/** The first value given under any of the option's names (Kubo accepts the long name and its short aliases). */
function pick(q: URLSearchParams, names: string[]): string | undefined {
  for (const n of names) {
    const v = q.get(n)
    if (v !== null) return v
  }
  return undefined
}

/** Go's strconv.ParseBool, which go-ipfs-cmds uses; a bare flag (`?pin`) counts as true. */
function parseBool(name: string, v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined
  if (['', '1', 't', 'T', 'true', 'TRUE', 'True'].includes(v)) return true
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(v)) return false
  bad(`invalid value "${v}" for boolean option "${name}"`)
}

function parseIntIn(name: string, v: string, min: number, max: number): number {
  if (!/^\d+$/.test(v)) bad(`invalid value "${v}" for option "${name}": expected an integer`)
  const n = Number(v)
  if (n < min || n > max) bad(`option "${name}" must be between ${min} and ${max}, got ${v}`)
  return n
}

function parseChunker(v: string | undefined): number {
  if (v === undefined || v === '' || v === 'default') return KUBO_ADD_DEFAULTS.chunkSize
  const m = /^size-(\d+)$/.exec(v)
  if (!m) unsupported(`chunker "${v}" is not supported here: only size-<bytes> (fixed-size chunks)`)
  return parseIntIn('chunker', m[1] ?? '', 1, MAX_CHUNK_SIZE)
}

/**
 * Reads Kubo's `add` query options. Options that would change the CID in a way we cannot reproduce exactly are
 * refused (400) rather than silently ignored, so a caller never gets a CID that differs from Kubo's.
 * Options that only affect output or bookkeeping (pin, quiet, quieter, silent, stream-channels...) are accepted.
 */
export function parseAddSettings(q: URLSearchParams): AddSettings {
  const cidVersionText = pick(q, ['cid-version'])
  const cidVersion = cidVersionText === undefined ? 0 : parseIntIn('cid-version', cidVersionText, 0, 1)
  // As in Kubo, CIDv1 implies raw leaves unless raw-leaves is given explicitly.
  const rawLeaves = parseBool('raw-leaves', pick(q, ['raw-leaves'])) ?? cidVersion === 1
  const hash = pick(q, ['hash'])
  if (hash !== undefined && hash !== '' && hash !== 'sha2-256') {
    unsupported(`hash function "${hash}" is not supported here: only sha2-256`)
  }
  if (parseBool('trickle', pick(q, ['trickle', 't']))) unsupported('the trickle layout is not supported here')
  if (parseBool('inline', pick(q, ['inline']))) unsupported('inline blocks are not supported here')
  if (parseBool('nocopy', pick(q, ['nocopy']))) unsupported('the filestore (nocopy) is not supported here')
  const maxLinksText = pick(q, ['max-file-links'])
  return {
    cidVersion: cidVersion === 1 ? 1 : 0,
    rawLeaves,
    chunkSize: parseChunker(pick(q, ['chunker', 's'])),
    maxChildrenPerNode:
      maxLinksText === undefined ? KUBO_ADD_DEFAULTS.maxChildrenPerNode : parseIntIn('max-file-links', maxLinksText, 2, 65_536),
    wrapWithDirectory: parseBool('wrap-with-directory', pick(q, ['wrap-with-directory', 'w'])) ?? false,
    onlyHash: parseBool('only-hash', pick(q, ['only-hash', 'n'])) ?? false,
    progress: parseBool('progress', pick(q, ['progress', 'p'])) ?? false,
  }
}
