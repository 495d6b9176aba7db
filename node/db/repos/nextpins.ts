import type { Database, Tx } from '../database.js'
import type { Hash } from '../../core/ids.js'

/**
 * The receiver's masked-pin positions (FireFly's `nextpins`): for each private context (core/hashes
 * `privateContext(topic, group)`) and author DID, the nonce of the next message this member may confirm there.
 */
export class NextPinsRepo {
  constructor(private readonly db: Database) {}

  /** The next expected nonce of (context, author): 0 for a sequence never seen. */
  next(context: Hash, author: string, tx?: Tx): number {
    const row = (tx ?? this.db).get<{ nonce: number }>('SELECT nonce FROM nextpins WHERE context = ? AND author = ?', [context, author])
    return row ? Number(row.nonce) : 0
  }

  /** The message with `nonce` was settled: the next one expected is `nonce + 1`. */
  advance(tx: Tx, context: Hash, author: string, nonce: number): void {
    tx.run('INSERT INTO nextpins (context, author, nonce) VALUES (?, ?, ?) ON CONFLICT (context, author) DO UPDATE SET nonce = MAX(nonce, excluded.nonce)', [context, author, nonce + 1])
  }
}
