import { dataDigest } from '../core/hashes.js'
import { batchTypeOf, carriedFields, type Data, type DataRef, type Message } from '../model/index.js'
import { refKey } from '../db/repos/ref-key.js'

/** A message's data item as `?fetchdigests=true` lists it (Parley-only): its id and hash, and the digest of what it carried. */
export interface DataDigest {
  id: string
  hash: string
  /** Absent when the item is not held here. */
  digest?: string
}

/**
 * Each message's data as `[{id, hash, digest}]` (docs/api.md, `fetchdigests`), the digests of the fields a batch
 * carries with an item (core/hashes.ts dataDigest), computed from the rows held here: this member's own items have
 * no stored digest, and every member computes them alike. A private message's blob reference is left out (null), as
 * this member's own item gets one when a later broadcast publishes it, after the private batch carried it without.
 * One read of the data rows for the whole page (`byRefs`).
 */
export function dataDigests(messages: readonly Message[], byRefs: (refs: readonly DataRef[]) => Map<string, Data>): Map<Message, DataDigest[]> {
  const rows = byRefs(messages.flatMap((m) => m.data))
  return new Map(
    messages.map((m) => {
      const broadcast = batchTypeOf(m) === 'broadcast'
      return [
        m,
        m.data.map((r) => {
          const d = rows.get(refKey(r))
          if (d === undefined) return { id: r.id, hash: r.hash }
          const fields = carriedFields(d)
          return { id: r.id, hash: r.hash, digest: dataDigest(broadcast ? fields : { ...fields, blobPublic: null }) }
        }),
      ]
    }),
  )
}
