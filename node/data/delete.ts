import { ParleyError } from '../core/errors.js'
import type { DataId } from '../core/ids.js'
import type { Database } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { DataRepo } from '../db/repos/data.js'

export interface DataRemoverDeps {
  db: Database
  data: DataRepo
  blobs: BlobsRepo
}

/**
 * FireFly's `DELETE data/{id}`: removes a data item and, when no other data item refers to its blob, the blob: its
 * record at once (the blob is no longer served), its file at the node's next start (the blob store's sweep), since an
 * upload of the same content may be writing that file right now. A data item a message carries is refused (409): the
 * message's data hash, its batch (built again from the database while it is not pinned yet) and other members' copies
 * all rest on it. FireFly deletes it anyway and leaves such messages without their data; this node keeps every
 * message whole.
 */
export class DataRemover {
  constructor(private readonly deps: DataRemoverDeps) {}

  async delete(namespace: string, id: DataId): Promise<void> {
    const { db, data, blobs } = this.deps
    await db.transaction((tx) => {
      const d = data.own(id, tx)
      if (!d || d.namespace !== namespace) throw new ParleyError('NOT_FOUND', `data ${id} not found in namespace ${namespace}`)
      // Read and deleted in one transaction: no message can come to carry it in between.
      const message = data.messageWith(namespace, d, tx)
      if (message) throw new ParleyError('CONFLICT', `data ${id} is carried by message ${message}; only data no message carries can be deleted`)
      const { blobStillUsed } = data.delete(tx, d)
      if (d.blob && !blobStillUsed) blobs.delete(tx, d.blob.hash)
    })
  }
}
