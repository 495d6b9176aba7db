import { v1Foundation } from './v1-foundation.js'

/** Every schema version in order; the database applies those it has not yet applied, once. */
export const migrations = [v1Foundation]
