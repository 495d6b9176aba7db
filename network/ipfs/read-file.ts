import { exporter, type UnixFSEntry } from 'ipfs-unixfs-exporter'
import type { CID } from 'multiformats/cid'
import type { Blocks } from './blocks.js'

/** Nodes whose bytes can be streamed: UnixFS files, raw blocks (raw leaves) and identity CIDs. */
export type FileEntry = Extract<UnixFSEntry, { type: 'file' | 'raw' | 'identity' }>

export function isFileEntry(entry: UnixFSEntry): entry is FileEntry {
  return entry.type === 'file' || entry.type === 'raw' || entry.type === 'identity'
}

/**
 * Sibling blocks fetched ahead of the one being streamed, per tree level: enough to overlap disk reads with
 * sending, small enough that memory does not depend on the file size (4 x 256 KiB leaves).
 */
const READ_AHEAD = 4

/**
 * Streams bytes [offset, offset + length) of a file, clamped to its size.
 *
 * Why not the exporter's own `content()`: it walks the whole DAG into an unbounded queue as fast as the disk
 * allows, so behind a slow reader the process ends up holding the whole file. This walk is pulled by the
 * consumer instead: the next block is read only as the previous one is taken, with a small read-ahead.
 */
export async function* readFile(blocks: Blocks, entry: FileEntry, offset = 0n, length?: bigint): AsyncGenerator<Uint8Array> {
  const size = entry.size
  const start = offset < size ? offset : size
  const end = length === undefined || start + length > size ? size : start + length
  if (end <= start) return
  let sent = 0n
  for await (const chunk of walk(blocks, entry, 0n, start, end)) {
    sent += BigInt(chunk.byteLength)
    yield chunk
  }
  // The root's declared size and the leaves disagree: the DAG is corrupt, and the reader must not take a short
  // (or long) file for a whole one.
  if (sent !== end - start) throw new Error(`corrupt DAG under ${entry.cid.toString()}: expected ${end - start} bytes, read ${sent}`)
}

/** The part of `data` (which starts at file position `pos`) that falls inside [start, end). */
function clip(data: Uint8Array, pos: bigint, start: bigint, end: bigint): Uint8Array | undefined {
  const from = start > pos ? Number(start - pos) : 0
  const to = end - pos < BigInt(data.byteLength) ? Number(end - pos) : data.byteLength
  return to > from ? data.subarray(from, to) : undefined
}

async function fetchChild(blocks: Blocks, cid: CID): Promise<FileEntry> {
  const child = await exporter(cid, blocks)
  if (!isFileEntry(child)) throw new Error(`corrupt DAG: ${cid.toString()} is a ${child.type} inside a file`)
  return child
}

async function* walk(blocks: Blocks, entry: FileEntry, pos: bigint, start: bigint, end: bigint): AsyncGenerator<Uint8Array> {
  if (entry.type !== 'file') {
    const part = clip(entry.node, pos, start, end)
    if (part) yield part
    return
  }
  const { unixfs, node } = entry
  if (unixfs.data !== undefined && unixfs.data.byteLength > 0) {
    const part = clip(unixfs.data, pos, start, end)
    if (part) yield part
    pos += BigInt(unixfs.data.byteLength)
  }
  if (node.Links.length !== unixfs.blockSizes.length) {
    throw new Error(`corrupt DAG: ${entry.cid.toString()} has ${node.Links.length} links but ${unixfs.blockSizes.length} block sizes`)
  }
  // Only the children that overlap the wanted range are read at all: offset/length skip whole subtrees.
  const wanted: Array<{ cid: CID; pos: bigint }> = []
  for (let i = 0; i < node.Links.length && pos < end; i++) {
    const childEnd = pos + (unixfs.blockSizes[i] ?? 0n)
    const link = node.Links[i]
    if (link && childEnd > start) wanted.push({ cid: link.Hash, pos })
    pos = childEnd
  }
  const pending: Array<Promise<FileEntry>> = []
  let requested = 0
  const request = (): void => {
    const w = wanted[requested++]
    if (!w) return
    const p = fetchChild(blocks, w.cid)
    p.catch(() => undefined) // awaited below in order; this only keeps an abandoned read-ahead from being "unhandled"
    pending.push(p)
  }
  while (requested < wanted.length && pending.length < READ_AHEAD) request()
  for (const w of wanted) {
    const next = pending.shift()
    if (!next) break
    const child = await next
    request()
    yield* walk(blocks, child, w.pos, start, end)
  }
}
