import type { StatementTally } from '../../node/db/pg/bridge.js'

/** Tallies summed by their SQL head: an insert of 1, 2, 4 ... rows is one statement to read. */
function byHead(list: readonly StatementTally[]): Map<string, { statements: number; roundTrips: number }> {
  const out = new Map<string, { statements: number; roundTrips: number }>()
  for (const t of list) {
    const sum = out.get(t.sql) ?? { statements: 0, roundTrips: 0 }
    sum.statements += t.statements
    sum.roundTrips += t.roundTrips
    out.set(t.sql, sum)
  }
  return out
}

/**
 * Prints what each statement text cost per message between two tallies of a PostgreSQL database
 * (PgDatabase.statementTally): statements sent, and the round trips the event loop waited for that it ended.
 */
export function printTally(before: readonly StatementTally[], after: readonly StatementTally[], messages: number, log: (line: string) => void = console.log): void {
  const was = byHead(before)
  const rows = [...byHead(after)]
    .map(([sql, t]) => ({ sql, statements: t.statements - (was.get(sql)?.statements ?? 0), roundTrips: t.roundTrips - (was.get(sql)?.roundTrips ?? 0) }))
    .filter((t) => t.statements > 0)
    .sort((a, b) => b.statements - a.statements)
  const per = (x: number): string => (x / messages).toFixed(3).padStart(7)
  log('per message: statements, round trips it ended, statement')
  for (const r of rows) log(`${per(r.statements)} ${per(r.roundTrips)}  ${r.sql}`)
}
