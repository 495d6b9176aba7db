/**
 * Version 4: where each datatype's definition stands in the chain's order (the local sequence of its first pin;
 * pins are stored in chain order, so comparing two of them compares their places on chain). A member checks
 * data against a datatype only if the definition was ordered before the message, so every member decides the
 * same whatever order the batches happened to arrive in.
 */
export const v4DatatypeOrder = {
  version: 4,
  name: 'datatypes: chain position of the definition',
  up: `ALTER TABLE datatypes ADD COLUMN ordered_at INTEGER NOT NULL DEFAULT 0;`,
}
