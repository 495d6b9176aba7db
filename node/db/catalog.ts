import type { EngineName } from './engine.js'

/**
 * What a whole-database copy (node/db/move/) asks of an engine's catalog, as read statements with bound parameters:
 * part of the dialect seam with engine.ts's Dialect, kept apart because only the copy needs it. Each answers rows of
 * one column `name` (or `v` for a sequence value).
 */
export interface Catalog {
  /** The tables the node's migrations made, by name; not the engine's own (sqlite_sequence, sql.js's journal meta). */
  readonly tables: string
  /** The columns of table `?`, in their declared order. */
  readonly columns: string
  /** The primary key columns of table `?`, in key order. */
  readonly primaryKey: string
  /** The column of table `?` whose numbers are handed out to rows inserted without one (AUTOINCREMENT, identity); none if none. */
  readonly sequenced: string
  /** The last number table `?`'s sequence handed out, as `v` (null or no row: none yet). Takes the table, then the column. */
  readonly sequenceValue: string
  /** Tables that have a trigger on them. */
  readonly triggered: string
  /** Writes that make table `t`'s sequence continue after `value`, as the statements to run, with their parameters. */
  setSequence(table: string, column: string, value: number): { sql: string; params: (string | number)[] }[]
}

const SQLITE: Catalog = {
  tables: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name != 'parley_journal_meta' ORDER BY name",
  columns: 'SELECT name FROM pragma_table_info(?) ORDER BY cid',
  primaryKey: 'SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk',
  // Only AUTOINCREMENT keeps a sequence of its own; a plain INTEGER PRIMARY KEY continues after the largest key.
  sequenced:
    "SELECT p.name AS name FROM pragma_table_info(?1) p, sqlite_master m WHERE m.type = 'table' AND m.name = ?1 AND p.pk = 1 AND upper(p.type) = 'INTEGER' AND upper(m.sql) LIKE '%AUTOINCREMENT%'",
  sequenceValue: 'SELECT seq AS v FROM sqlite_sequence WHERE name = ?1 AND ?2 IS NOT NULL',
  triggered: "SELECT DISTINCT tbl_name AS name FROM sqlite_master WHERE type = 'trigger' ORDER BY tbl_name",
  setSequence: (table, _column, value) => [
    { sql: 'DELETE FROM sqlite_sequence WHERE name = ?', params: [table] },
    { sql: 'INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)', params: [table, value] },
  ],
}

const POSTGRES: Catalog = {
  tables: "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
  columns: 'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position',
  primaryKey:
    'SELECT k.column_name AS name FROM information_schema.table_constraints c JOIN information_schema.key_column_usage k ' +
    'ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema AND k.table_name = c.table_name ' +
    "WHERE c.table_schema = current_schema() AND c.table_name = ? AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position",
  sequenced: "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND is_identity = 'YES'",
  sequenceValue: 'SELECT pg_sequence_last_value(CAST(pg_get_serial_sequence(?, ?) AS regclass)) AS v',
  triggered: 'SELECT DISTINCT event_object_table AS name FROM information_schema.triggers WHERE trigger_schema = current_schema() ORDER BY event_object_table',
  // As used up to `value` (is_called), so that sequenceValue reads it back and the next row gets value + 1. A sequence
  // is outside transactions: it holds once set, whatever becomes of the transaction it ran in.
  setSequence: (table, column, value) => [{ sql: 'SELECT setval(pg_get_serial_sequence(?, ?), ?) AS v', params: [table, column, value] }],
}

export function catalogOf(engine: EngineName): Catalog {
  return engine === 'postgres' ? POSTGRES : SQLITE
}
