/**
 * Version 8: private blobs over the exchange.
 *
 * - `delivery_blobs`: the blobs a peer node has acknowledged (its 204: the blob is stored there, verified against
 *   its hash and size). A private batch's delivery to a peer first sends each distinct blob of the batch that has no
 *   row here for that peer, then the batch (FireFly's order: blobs before the batch that refers to them). A row is
 *   written only after the peer's acknowledgement, so a delivery interrupted by a restart sends again exactly the
 *   blobs not acknowledged yet; a blob shared by several batches goes to a peer once.
 */
export const v8DeliveryBlobs = {
  version: 8,
  name: 'private blobs: which blobs each peer node acknowledged',
  up: `
    CREATE TABLE delivery_blobs (
      peer    TEXT NOT NULL,
      hash    TEXT NOT NULL,
      created TEXT NOT NULL,
      PRIMARY KEY (peer, hash)
    );
  `,
}
