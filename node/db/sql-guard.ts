import { DatabaseError } from './errors.js'

/**
 * Cheap checks on SQL text, run once per distinct statement (the verdict is cached with the prepared
 * statement), never per execution.
 *
 * Why: the journal records write statements and replays them after a crash. A statement whose effect
 * depends on the clock, on randomness or on connection history would replay to a different database.
 * Values like ids and timestamps must come from bound parameters, which the journal stores verbatim.
 */

const NONDETERMINISTIC: readonly { pattern: RegExp; why: string }[] = [
  { pattern: /\brandom(blob)?\s*\(/i, why: 'random()/randomblob()' },
  { pattern: /'now'/i, why: "the 'now' time value" },
  { pattern: /\bcurrent_(timestamp|date|time)\b/i, why: 'CURRENT_TIMESTAMP/CURRENT_DATE/CURRENT_TIME' },
  // Date functions default to 'now' when given no time value.
  { pattern: /\b(date|time|datetime|julianday|unixepoch)\s*\(\s*\)/i, why: 'a date function without a time value' },
  { pattern: /\bstrftime\s*\(\s*'[^']*'\s*\)/i, why: 'strftime() without a time value' },
  // These depend on what earlier statements on the connection did, which differs after a snapshot load.
  { pattern: /\b(total_)?changes\s*\(/i, why: 'changes()/total_changes()' },
  { pattern: /\blast_insert_rowid\s*\(/i, why: 'last_insert_rowid()' },
]

/** Throws DB_NONDETERMINISTIC when write SQL visibly uses a value the journal could not reproduce. */
export function assertDeterministic(sql: string): void {
  for (const { pattern, why } of NONDETERMINISTIC) {
    if (pattern.test(sql)) {
      throw new DatabaseError(
        'DB_NONDETERMINISTIC',
        `write SQL uses ${why}, which would replay differently from the journal; pass the value as a parameter: ${preview(sql)}`,
      )
    }
  }
}

export type StatementKind =
  /** Cannot change the database: SELECT, VALUES, a WITH without DML, EXPLAIN, a pragma query. */
  | 'read'
  /** Everything else: journaled when run inside a transaction, refused outside one. */
  | 'write'
  /** Transaction control and attachments, which would break the journal's framing. */
  | 'forbidden'

const FORBIDDEN = new Set(['begin', 'commit', 'end', 'rollback', 'savepoint', 'release', 'attach', 'detach', 'vacuum'])

/**
 * Classifies a statement by its text (comments skipped), erring towards 'write': a read taken for a
 * write is only journaled needlessly (or refused outside a transaction, with a clear message), while a
 * write taken for a read would change data the journal never sees. SQLite's own read-only test
 * (sqlite3_stmt_readonly) is not exposed by sql.js, and `PRAGMA query_only` toggled around every
 * transaction would cost more than the transaction's insert itself.
 */
export function classify(sql: string): StatementKind {
  const text = stripLeadingComments(sql)
  const keyword = /^[a-z]+/i.exec(text)?.[0].toLowerCase() ?? ''
  if (keyword === 'select' || keyword === 'values' || keyword === 'explain') return 'read'
  // A common table expression may lead into INSERT/UPDATE/DELETE.
  if (keyword === 'with') return /\b(insert|update|delete|replace)\b/i.test(text) ? 'write' : 'read'
  // A pragma assignment changes the connection or the file; a pragma query reads.
  if (keyword === 'pragma') return /^pragma\s+[\w.]+\s*=/i.test(text) ? 'write' : 'read'
  if (FORBIDDEN.has(keyword)) return 'forbidden'
  return 'write'
}

/** Whether the statement inserts rows, so that its rowid is worth asking SQLite for. */
export function inserts(sql: string): boolean {
  const text = stripLeadingComments(sql)
  return /^(insert|replace)\b/i.test(text) || (/^with\b/i.test(text) && /\b(insert|replace)\b/i.test(text))
}

function stripLeadingComments(sql: string): string {
  let s = sql
  for (;;) {
    s = s.trimStart()
    if (s.startsWith('--')) {
      const nl = s.indexOf('\n')
      s = nl < 0 ? '' : s.slice(nl + 1)
    } else if (s.startsWith('/*')) {
      // Searched past the opening `/*`: in `/*/` the star opens the comment and cannot also close it.
      const end = s.indexOf('*/', 2)
      s = end < 0 ? '' : s.slice(end + 2)
    } else {
      return s
    }
  }
}

export function preview(sql: string): string {
  const flat = sql.replace(/\s+/g, ' ').trim()
  return flat.length > 120 ? `${flat.slice(0, 117)}...` : flat
}
