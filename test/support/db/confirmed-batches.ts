import type { Database } from '../../../node/db/database.js'

/** A hash of 64 hex digits, distinct for each `n`. */
const hex = (prefix: string, n: number) => (prefix + n.toString(16)).padStart(64, '0')

/**
 * Writes, into a database at a schema before version 18, `count` confirmed peer messages in batches of `perBatch`, each
 * batch with its manifest and the pins of its key: what the v18 backfill of `pin_seq` reads, at a size where a backfill
 * walking every pin of a batch per message (with a manifest search each) shows. Rows go in a few hundred per statement.
 */
export async function writeConfirmedBatches(db: Database, count: number, perBatch: number): Promise<void> {
  const batches = Math.ceil(count / perBatch)
  await db.transaction((tx) => {
    for (let b = 0; b < batches; b++) {
      const batchId = `b${b}`
      const batchHash = hex('b', b)
      const ids = Array.from({ length: Math.min(perBatch, count - b * perBatch) }, (_, i) => b * perBatch + i)
      const manifest = JSON.stringify({ messages: ids.map((m) => ({ id: `m${m}`, hash: hex('a', m), topics: 1 })) })
      tx.run(
        `INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, state, local)
         VALUES (?, 'broadcast', 'default', 'did:firefly:org/org1', '0xpeer', 'c', ?, ?, ?, 'received', 0)`,
        [batchId, batchHash, manifest, `t${b}`],
      )
      // One pin per message (its topic's), all of the batch's key.
      tx.run(
        `INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id) VALUES ${ids.map(() => "(?, ?, ?, ?, 0, '0xpeer', 'e')").join(', ')}`,
        ids.flatMap((m, i) => [batchId, batchHash, i, hex('c', m)]),
      )
      tx.run(
        `INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, confirmed_key, batch_id)
         VALUES ${ids.map(() => "(?, 'default', 'broadcast', 'batch_pin', 'did:firefly:org/org1', '0xpeer', 'c', 'k', '[\"t\"]', ?, ?, '[]', 'confirmed', 0, 'z', ?)").join(', ')}`,
        ids.flatMap((m) => [`m${m}`, hex('d', m), hex('a', m), batchId]),
      )
    }
  })
}
