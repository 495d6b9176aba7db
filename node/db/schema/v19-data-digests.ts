import { dataDigest } from '../../core/hashes.js'
import type { Tx } from '../types.js'

/**
 * Version 19: received data items known by (id, hash, digest). A data hash covers only the value and the blob's hash,
 * so a peer may send a copy of a data item under its id and value with other carried fields (a datatype, a validator,
 * a blob's name, size or reference): kept as one (id, hash) row, the first stored would decide every message naming
 * it, and members would differ by arrival order. The digest (core/hashes.ts dataDigest) covers those fields.
 *
 * - `data` is rebuilt unique on (id, hash, digest): a received row has the digest of what its batch carried; this
 *   member's own rows have none (NULLs never collide) and keep one row per id (`data_local`). Its indexes of versions
 *   2, 3 and 18 are recreated as they were.
 * - Backfill (JS, for the sha256): every received row gets its digest; every received message's reference to a
 *   received row records that digest (at version 18 an (id, hash) is one row, the one each reference means);
 *   a peer's item this member's own messages name (sent by id) gets an own copy, as a send naming it does.
 *
 * Rows are copied with their sequences, so every cursor and order stays as it was.
 */
export const v19DataDigests = {
  version: 19,
  name: 'received data unique per (id, hash, digest of the fields its batch carried)',
  up: `
    CREATE TABLE data_v19 (
      seq              INTEGER PRIMARY KEY AUTOINCREMENT,
      id               TEXT NOT NULL,
      namespace        TEXT NOT NULL,
      validator        TEXT NOT NULL,
      datatype_name    TEXT,
      datatype_version TEXT,
      hash             TEXT NOT NULL,
      value            TEXT,
      created          TEXT NOT NULL,
      blob_hash        TEXT,
      blob_size        INTEGER,
      blob_name        TEXT,
      blob_public      TEXT,
      public           TEXT,
      local            INTEGER NOT NULL,
      digest           TEXT,
      UNIQUE (id, hash, digest)
    );
    INSERT INTO data_v19 (seq, id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, public, local)
      SELECT seq, id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, public, local FROM data;
    DROP TABLE data;
    ALTER TABLE data_v19 RENAME TO data;
    CREATE INDEX data_namespace ON data (namespace, seq);
    CREATE INDEX data_blob ON data (blob_hash) WHERE blob_hash IS NOT NULL;
    CREATE UNIQUE INDEX data_local ON data (id) WHERE local = 1;
  `,
  backfill: backfillDigests,
}

interface ReceivedRow {
  seq: number
  id: string
  hash: string
  validator: string
  namespace: string
  created: string
  datatype_name: string | null
  datatype_version: string | null
  blob_hash: string | null
  blob_size: number | null
  blob_name: string | null
  blob_public: string | null
  [k: string]: string | number | null
}

interface Ref {
  id: string
  hash: string
  digest?: string
}

/** Statements carry their rows as one JSON list of this many `[seq, value]` pairs. */
const CHUNK = 2000

function backfillDigests(tx: Tx): void {
  const received = tx.all<ReceivedRow>(
    'SELECT seq, id, hash, validator, namespace, created, datatype_name, datatype_version, blob_hash, blob_size, blob_name, blob_public FROM data WHERE local = 0 ORDER BY seq',
  )
  // At version 18 an (id, hash) is one row: own or received.
  const byPair = new Map<string, { seq: number; digest: string }>()
  const digests: [number, string][] = []
  for (const r of received) {
    const digest = dataDigest({
      validator: r.validator,
      namespace: r.namespace,
      created: r.created,
      datatypeName: r.datatype_name,
      datatypeVersion: r.datatype_version,
      blobHash: r.blob_hash,
      blobSize: r.blob_size === null ? null : Number(r.blob_size),
      blobName: r.blob_name,
      blobPublic: r.blob_public,
    })
    byPair.set(`${r.id}/${r.hash}`, { seq: Number(r.seq), digest })
    digests.push([Number(r.seq), digest])
  }
  eachChunk(digests, (list) =>
    tx.run("UPDATE data SET digest = json_extract(p.value, '$[1]') FROM (SELECT value FROM json_each(?)) AS p WHERE data.seq = CAST(json_extract(p.value, '$[0]') AS INTEGER)", [list]),
  )
  if (byPair.size === 0) return

  const ownIds = new Set(tx.all<{ id: string }>('SELECT id FROM data WHERE local = 1').map((r) => r.id))
  const rewritten: [number, string][] = []
  const adopt = new Set<number>()
  for (const m of tx.all<{ seq: number; local: number; data: string }>("SELECT seq, local, data FROM messages WHERE data != '[]' ORDER BY seq")) {
    const refs = JSON.parse(m.data) as Ref[]
    if (Number(m.local) === 1) {
      for (const r of refs) {
        const row = byPair.get(`${r.id}/${r.hash}`)
        if (row !== undefined && !ownIds.has(r.id)) {
          adopt.add(row.seq)
          ownIds.add(r.id)
        }
      }
      continue
    }
    let changed = false
    for (const r of refs) {
      const row = r.digest === undefined ? byPair.get(`${r.id}/${r.hash}`) : undefined
      if (row === undefined) continue
      r.digest = row.digest
      changed = true
    }
    if (changed) rewritten.push([Number(m.seq), JSON.stringify(refs)])
  }
  eachChunk(rewritten, (list) =>
    tx.run("UPDATE messages SET data = json_extract(p.value, '$[1]') FROM (SELECT value FROM json_each(?)) AS p WHERE messages.seq = CAST(json_extract(p.value, '$[0]') AS INTEGER)", [list]),
  )
  eachChunk(
    [...adopt].map((seq): [number, string] => [seq, '']),
    (list) =>
      tx.run(
        `INSERT INTO data (id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, public, local)
           SELECT d.id, d.namespace, d.validator, d.datatype_name, d.datatype_version, d.hash, d.value, d.created, d.blob_hash, d.blob_size, d.blob_name, d.blob_public, d.public, 1
             FROM data d, (SELECT value FROM json_each(?)) AS p WHERE d.seq = CAST(json_extract(p.value, '$[0]') AS INTEGER) ORDER BY d.seq
           ON CONFLICT DO NOTHING`,
        [list],
      ),
  )
}

/** Calls `run` with each slice of `pairs` as its JSON text. */
function eachChunk(pairs: readonly [number, string][], run: (json: string) => void): void {
  for (let i = 0; i < pairs.length; i += CHUNK) run(JSON.stringify(pairs.slice(i, i + CHUNK)))
}
