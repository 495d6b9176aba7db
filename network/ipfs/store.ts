import { exporter, type UnixFSEntry } from 'ipfs-unixfs-exporter'
import { importer, type ImportCandidate } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import type { CID } from 'multiformats/cid'
import type { AddSettings } from './add-options.js'
import { HashOnlyBlocks, LocalBlocks, type Blocks } from './blocks.js'
import { IpfsError } from './errors.js'
import { formatIpfsPath, type IpfsPath } from './ipfs-path.js'
import { isFileEntry, readFile, type FileEntry } from './read-file.js'
import { leanBalanced } from './lean-layout.js'

export interface AddedEntry {
  /** The path as sent ('' for unnamed content). */
  path: string
  cid: CID
  /** Cumulative DAG size (Kubo's `Size` in `add` output). */
  size: bigint
  directory: boolean
}

/**
 * The content store: Helia's UnixFS building blocks (ipfs-unixfs-importer / -exporter) over the filesystem
 * blockstore in `<dir>/blocks`. The importer is called directly rather than through @helia/unixfs, whose
 * `addAll` is the same call with defaults we override entirely anyway: that package also loads libp2p
 * utilities we never use, about 15 MiB of resident memory for nothing.
 */
export class ContentStore {
  private readonly hashOnly: Blocks

  private constructor(private readonly blocks: LocalBlocks) {
    this.hashOnly = new HashOnlyBlocks(blocks)
  }

  static async open(path: string): Promise<ContentStore> {
    return new ContentStore(await LocalBlocks.open(path))
  }

  /**
   * Imports the candidates in order, yielding each file as it completes (and directories at the end).
   * `onRead` reports the bytes read so far of the current file, for Kubo's progress lines.
   */
  async *add(
    source: AsyncIterable<ImportCandidate>,
    settings: AddSettings,
    onRead?: (path: string, bytes: bigint) => void,
  ): AsyncGenerator<AddedEntry> {
    const results = importer(source, settings.onlyHash ? this.hashOnly : this.blocks, {
      cidVersion: settings.cidVersion,
      rawLeaves: settings.rawLeaves,
      // Kubo's balanced builder wraps non-raw leaves as UnixFS 'file' nodes and keeps a one-chunk file as its own root.
      leafType: 'file',
      reduceSingleLeafToSelf: true,
      chunker: fixedSize({ chunkSize: settings.chunkSize }),
      layout: leanBalanced(settings.maxChildrenPerNode),
      wrapWithDirectory: settings.wrapWithDirectory,
      // Kubo's legacy directory sharding: HAMT above 256 KiB of (name + CID) bytes.
      shardSplitThresholdBytes: 262_144,
      shardSplitStrategy: 'links-bytes',
      // One file at a time: the multipart parts arrive in sequence, so a file must be read to its end before the
      // next one can be; importing files in parallel would ask for part N+1 while part N is still unread.
      fileImportConcurrency: 1,
      onProgress: onRead
        ? (evt) => {
            if (evt.type === 'unixfs:importer:progress:file:read') onRead(evt.detail.path ?? '', evt.detail.bytesRead)
          }
        : undefined,
    })
    for await (const r of results) {
      yield { path: r.path ?? '', cid: r.cid, size: r.size, directory: r.unixfs?.isDirectory() === true }
    }
  }

  /** Follows a path to its node; fails fast (no network) when a block or a name is missing. */
  async resolve(p: IpfsPath): Promise<UnixFSEntry> {
    try {
      // The exporter matches link names literally: give it the names as they are, not percent-encoded.
      return await exporter(['/ipfs', p.cid.toString(), ...p.segments].join('/'), this.blocks)
    } catch (err) {
      if (err instanceof IpfsError) throw err
      const name = err instanceof Error ? err.name : ''
      if (name === 'NotFoundError') {
        throw new IpfsError('not-found', `no link named by path "${formatIpfsPath(p)}": ${(err as Error).message}`)
      }
      if (name === 'NoResolverError') throw new IpfsError('not-a-file', `${p.cid.toString()} uses a codec this IPFS cannot read`)
      throw err
    }
  }

  /** Resolves a path that must name a file (Kubo: "this dag node is a directory"). */
  async resolveFile(p: IpfsPath): Promise<FileEntry> {
    const entry = await this.resolve(p)
    if (entry.type === 'directory') throw new IpfsError('not-a-file', 'this dag node is a directory')
    if (!isFileEntry(entry)) throw new IpfsError('not-a-file', `this dag node is not a file (${entry.type})`)
    return entry
  }

  read(entry: FileEntry, offset?: bigint, length?: bigint): AsyncGenerator<Uint8Array> {
    return readFile(this.blocks, entry, offset, length)
  }

  close(): Promise<void> {
    return this.blocks.close()
  }
}
