/**
 * Version 7: which pins the aggregator can act on.
 *
 * - `pins.held`: 1 when the pin's batch is stored here and not refused, so that its message can be decided; 0
 *   otherwise (a broadcast batch not downloaded yet, a private batch of a group this member is not in). A pin of a
 *   batch that is not here can only wait, so the aggregator's rewinds (a definition, a blob, a datatype settled) walk
 *   only held pins, and a member outside a group does not walk again, at every rewind, the private pins it will never
 *   receive the batches of. Kept by the database itself, whichever order the pin and the batch come in: a pin is
 *   marked when inserted after its batch, a batch marks its pins when inserted after them (a refused batch marks
 *   nothing; batch states never change to or from `refused`). Both write only what their own statement determines,
 *   so the journal's replay marks the same pins.
 * - `pins_held_waiting`: the waiting held pins in chain order (what a rewind reads).
 * - `pins_broadcast_waiting`: the waiting unmasked pins in chain order (what the aggregator's per-context queues are
 *   built from; private pins are ordered by their nonces, not by those queues).
 */
export const v7HeldPins = {
  version: 7,
  name: 'pins: held (their batch is here), indexes of waiting held and waiting broadcast pins',
  up: `
    ALTER TABLE pins ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
    UPDATE pins SET held = 1 WHERE batch_id IN (SELECT id FROM batches WHERE state != 'refused');
    CREATE INDEX pins_held_waiting ON pins (seq) WHERE dispatched = 0 AND held = 1;
    CREATE INDEX pins_broadcast_waiting ON pins (seq) WHERE dispatched = 0 AND masked = 0;

    CREATE TRIGGER pins_held_by_batch AFTER INSERT ON batches
    WHEN NEW.state != 'refused'
    BEGIN
      UPDATE pins SET held = 1 WHERE batch_id = NEW.id;
    END;

    CREATE TRIGGER pins_held_at_insert AFTER INSERT ON pins
    WHEN EXISTS (SELECT 1 FROM batches WHERE id = NEW.batch_id AND state != 'refused')
    BEGIN
      UPDATE pins SET held = 1 WHERE seq = NEW.seq;
    END;
  `,
}
