import type { Database, Tx } from '../database.js'
import type { Hash } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'

/** The blobs this node holds whole and verified (the files live in the blob store, named by hash). */
export class BlobsRepo {
  constructor(private readonly db: Database) {}

  insert(tx: Tx, b: { hash: Hash; size: number; created: Timestamp }): void {
    tx.run('INSERT INTO blobs (hash, size, created) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING', [b.hash, b.size, b.created])
  }

  /** When this node came to hold the blob (received, fetched or uploaded here), if it does. */
  heldSince(hash: Hash): Timestamp | undefined {
    return this.db.get<{ created: string }>('SELECT created FROM blobs WHERE hash = ?', [hash])?.created as Timestamp | undefined
  }

  /** This node no longer holds the blob (the data item referring to it was deleted). */
  delete(tx: Tx, hash: Hash): void {
    tx.run('DELETE FROM blobs WHERE hash = ?', [hash])
  }

  has(hash: Hash, tx?: Tx): boolean {
    return (tx ?? this.db).get('SELECT 1 AS x FROM blobs WHERE hash = ?', [hash]) !== undefined
  }
}
