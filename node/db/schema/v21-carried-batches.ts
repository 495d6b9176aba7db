/**
 * Version 21: which received batches recorded what they carried with a message held from another batch
 * (`carried_messages`, v20). `batches.carried` is set when the batch's store wrote such records, so a pass reading
 * a batch back reads its records only then: nearly every batch is all new where it arrives, and costs no read.
 */
export const v21CarriedBatches = {
  version: 21,
  name: 'batches that recorded what they carried',
  up: `
    ALTER TABLE batches ADD COLUMN carried INTEGER NOT NULL DEFAULT 0;
    UPDATE batches SET carried = 1 WHERE EXISTS (SELECT 1 FROM carried_messages c WHERE c.batch_id = batches.id AND c.batch_hash = batches.hash);
  `,
}
