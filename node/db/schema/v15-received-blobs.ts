/**
 * Version 15: what peers may make this member store.
 *
 * - `received_blobs`: the blobs a peer org's node sent over the exchange while no stored data item referred to them,
 *   with that org, what they are charged against its quota (`bytes`: their size, at least a minimum per blob, since
 *   every blob costs a file and a row) and when they came (`received`, epoch ms). A row goes once a data item refers
 *   to its blob (the blob is then the message's) or once the blob is deleted, unreferenced, after its time.
 */
export const v15ReceivedBlobs = {
  version: 15,
  name: 'blobs received from peers that no data item refers to yet',
  up: `
    CREATE TABLE received_blobs (
      hash     TEXT PRIMARY KEY,
      org      TEXT NOT NULL,
      bytes    INTEGER NOT NULL,
      received INTEGER NOT NULL
    );
    CREATE INDEX received_blobs_org ON received_blobs (org);
    CREATE INDEX received_blobs_received ON received_blobs (received);
  `,
}
