/**
 * Version 23: a private batch that was stored from a broadcast pin's payload (before v22 the fetcher stored a payload
 * as whatever type it named) is kept as a private batch delivered here, without that payload reference. A private
 * batch is delivered peer to peer and never stands for a broadcast pin's payload; with the reference cleared, the
 * fetcher (`broadcastBatchesNotHeld` at start-up) fetches that payload again and refuses it as no broadcast batch,
 * freeing that pin event's topics as on a member that fetched it after v22, while the row (the same id and hash, so
 * the same messages of the same group and author) still holds the group's private batch.
 */
export const v23FetchedPrivateBatches = {
  version: 23,
  name: 'private batches fetched for a broadcast pin kept without its payload reference',
  up: `
    UPDATE batches SET payload_ref = '' WHERE type = 'private' AND local = 0 AND payload_ref <> '';
  `,
}
