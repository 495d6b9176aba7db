import type { Database, Tx } from '../database.js'
import { DatabaseError } from '../errors.js'
import { nonceKey } from '../../core/hashes.js'
import type { Hash } from '../../core/ids.js'

/**
 * The sender's private-pin nonces: for each (topic, group, author DID), keyed by core/hashes `nonceKey`, the next
 * nonce to give out, from 0. Allocation happens when a private batch is sealed, inside the sealing transaction, so a
 * seal that rolls back gives its nonces back and a committed one never hands them out again (FireFly's `nonces`
 * table, allocated in `batch_manager.go getNextNonce`).
 */
export class NoncesRepo {
  constructor(private readonly db: Database) {}

  /**
   * Takes `count` consecutive nonces of `key` and answers the first: the key's nonces so far are 0..first-1, and this
   * transaction's are first..first+count-1. One statement, whatever was allocated before.
   */
  allocate(tx: Tx, key: Hash, count = 1): number {
    if (!Number.isSafeInteger(count) || count < 1) throw new DatabaseError('DB_MISUSE', `nonces: cannot allocate ${count} nonces; a positive whole number is needed`)
    const row = tx.get<{ next: number }>(
      'INSERT INTO nonces (hash, next) VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET next = next + excluded.next RETURNING next',
      [key, count],
    )
    const next = Number(row!.next)
    // Past 2^53 a JavaScript number is no longer the nonce; no real sequence gets near it.
    if (!Number.isSafeInteger(next)) throw new DatabaseError('DB_MISUSE', `nonces: the sequence ${key} has run past ${Number.MAX_SAFE_INTEGER}`)
    return next - count
  }

  /** `allocate` for the sequence of (topic, group, author DID). */
  allocateFor(tx: Tx, topic: string, group: Hash, authorDid: string, count = 1): number {
    return this.allocate(tx, nonceKey(topic, group, authorDid), count)
  }

  /** The nonce the next allocation of `key` would start at (0 for a sequence never used). */
  peek(key: Hash, tx?: Tx): number {
    const row = (tx ?? this.db).get<{ next: number }>('SELECT next FROM nonces WHERE hash = ?', [key])
    return row ? Number(row.next) : 0
  }
}
