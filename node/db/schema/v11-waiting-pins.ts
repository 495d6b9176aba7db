/**
 * Version 11: pins cost less to write. Every member writes a pin per message, marks its batch's pins held, then marks
 * each dispatched; with `dispatched` a key column of two full indexes, each of those moved index entries.
 *
 * - The waiting pins are indexed by partial indexes only (`pins_waiting` on seq, `pins_waiting_context` on hash and
 *   seq, both `WHERE dispatched = 0`), replacing `pins_undispatched (dispatched, seq)` and `pins_context (hash,
 *   dispatched, seq)`: dispatching a pin removes its entries instead of moving them. `pins_hash (hash, seq)` keeps the
 *   lookup of the first pin of a context (private pins), which the old context index served.
 * - `held` is written by the pin's INSERT (its batch is stored here and not refused: one lookup per batch, bound as a
 *   value, so the journal's replay writes the same) instead of a trigger running a check and an UPDATE per pin.
 *   Pins inserted before their batch are still marked by `pins_held_by_batch` (version 7) when the batch comes.
 */
export const v11WaitingPins = {
  version: 11,
  name: 'pins: partial indexes of waiting pins, held written by the insert',
  up: `
    DROP TRIGGER pins_held_at_insert;
    DROP INDEX pins_undispatched;
    DROP INDEX pins_context;
    CREATE INDEX pins_waiting ON pins (seq) WHERE dispatched = 0;
    CREATE INDEX pins_waiting_context ON pins (hash, seq) WHERE dispatched = 0;
    CREATE INDEX pins_hash ON pins (hash, seq);
  `,
}
