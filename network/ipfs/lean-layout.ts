import type { InProgressImportResult } from 'ipfs-unixfs-importer'
import { balanced, type FileLayout } from 'ipfs-unixfs-importer/layout'

/**
 * The importer's balanced layout (Kubo's), without holding the file in memory.
 *
 * With dag-pb leaves (Kubo's default), each leaf handed to the layout still carries its UnixFS object, whose
 * `data` is the whole chunk, until the parent node is built from a full batch of leaves. So the importer holds
 * maxChildrenPerNode x chunkSize bytes at once: 174 x 256 KiB = 43.5 MiB with Kubo's defaults, 256 MiB with
 * `--max-file-links 1024`. Building the parent only needs each leaf's data *length*, so once a leaf block is
 * written we replace the chunk by its length, in the form UnixFS already knows (`blockSizes`): the parent gets
 * the same block size (fileSize() sums data length and blockSizes), the same Tsize, hence the same CID.
 */
export function leanBalanced(maxChildrenPerNode: number): FileLayout {
  const layout = balanced({ maxChildrenPerNode })
  return (source, reduce) => layout(forgetLeafData(source), reduce)
}

async function* forgetLeafData(
  source: AsyncIterable<InProgressImportResult> | Iterable<InProgressImportResult>,
): AsyncGenerator<InProgressImportResult> {
  for await (const leaf of source) {
    const unixfs = leaf.unixfs
    // A one-chunk file is its own root: the reducer returns that leaf as is, so it keeps its data.
    const single = 'single' in leaf && leaf.single === true
    if (!single && unixfs?.data !== undefined && unixfs.blockSizes.length === 0) {
      unixfs.blockSizes = [BigInt(unixfs.data.byteLength)]
      unixfs.data = undefined
    }
    yield leaf
  }
}
