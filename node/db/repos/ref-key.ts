/**
 * The key of a message or data item by (id, hash) in maps: two rows may share an id (schema v18). A received data
 * item also by its digest (schema v19), as the references of a received message name it; this member's own by id and
 * hash alone, as its own messages name it.
 */
export function refKey(r: { id: string; hash: string; digest?: string | undefined }): string {
  return r.digest === undefined ? `${r.id}/${r.hash}` : `${r.id}/${r.hash}/${r.digest}`
}
