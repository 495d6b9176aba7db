/**
 * Version 10: when the steps of a batch's journey happened, for message traces (GET .../messages/{id}/trace). Without
 * it only a batch's sealing is timed; these moments are in no row nor event. Each is written by a statement the
 * node runs anyway (no transaction is added): null for rows written before this version, and where the step does not
 * apply.
 *
 * - `batches.uploaded`: this member's batch was made available (a broadcast's payload uploaded to shared storage; a
 *   private batch's deliveries queued). Recorded with the pin, once mined.
 * - `batches.pin_sent`: the chain took this member's pin transaction. Recorded with the pin, once mined.
 * - `batches.received`: this member stored a batch another member sent (downloaded, or delivered over the exchange).
 * - `deliveries.settled`: the peer acknowledged the delivery (`done`) or refused it for good (`failed`).
 */
export const v10TraceTimes = {
  version: 10,
  name: 'trace times: batch uploaded, pin sent and received; delivery settled',
  up: `
    ALTER TABLE batches ADD COLUMN uploaded TEXT;
    ALTER TABLE batches ADD COLUMN pin_sent TEXT;
    ALTER TABLE batches ADD COLUMN received TEXT;
    ALTER TABLE deliveries ADD COLUMN settled TEXT;
  `,
}
