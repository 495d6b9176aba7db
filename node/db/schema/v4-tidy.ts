/**
 * Version 4: drops `data.blob_path`, never written (blobs live in the blob store, named by their hash). Shipped
 * migrations are never rewritten (their checksums are recorded), so a column goes away in a migration of its own.
 */
export const v4Tidy = {
  version: 4,
  name: 'tidy: drop the unused data.blob_path',
  up: `
    ALTER TABLE data DROP COLUMN blob_path;
  `,
}
