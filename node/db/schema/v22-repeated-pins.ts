/**
 * Version 22: `pins.repeated`, set on a private (masked) pin when a pin of the same hash by the same signer was read
 * before it. Only such a pin can have an earlier copy deciding it (PrivateChecks, PinsRepo.firstPrivate), so the
 * aggregator looks for the first copy of that pin alone, and every other private pin costs no read. Pins are read in
 * chain order, so whether an earlier copy exists is known when a pin is inserted, and never changes after.
 * Backfill: the pins held already, by the same rule.
 */
export const v22RepeatedPins = {
  version: 22,
  name: 'private pins read before under the same hash and signer',
  up: `
    ALTER TABLE pins ADD COLUMN repeated INTEGER NOT NULL DEFAULT 0;
    UPDATE pins SET repeated = 1 WHERE masked = 1 AND EXISTS (SELECT 1 FROM pins e WHERE e.hash = pins.hash AND e.signer = pins.signer AND e.seq < pins.seq);
  `,
}
