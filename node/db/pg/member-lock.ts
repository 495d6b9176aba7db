/**
 * One member process per database (per schema, where members share a database): two processes writing one member's
 * tables would each hold its own idea of nonces, offsets and caches, and corrupt them, as two processes appending to
 * one journal would on SQLite (node/db/lock.ts). A member's connection holds a session-level advisory lock, which the
 * server releases when the connection ends, however it ends (a SIGKILL, a lost network: once the server notices).
 *
 * Session-level advisory locks need a connection of the member's own: a pooler in transaction mode (PgBouncer's
 * default) shares server connections between clients and would hand the lock to whoever runs next.
 */

/** The first key of the lock: "Prly". The second is the schema's, so that members on one database's schemas do not meet. */
export const MEMBER_LOCK_CLASS = 0x50726c79

/** Runs one statement on the member's connection and answers its rows. */
export type LockQuery = (text: string, values?: unknown[]) => Promise<Record<string, unknown>[]>

/** Who holds the lock: the server process behind its connection, and what that connection calls itself. */
export interface LockHolder {
  pid: number
  applicationName: string
  client: string
}

/**
 * The name a connection gives itself (`application_name`, at most 63 bytes): the process, the session, and the host,
 * so that a holder can be told from this process's own earlier connection, and found by an operator.
 */
export function connectionName(pid: number, session: number, host: string): string {
  return `parley ${pid}.${session}@${host}`.slice(0, 63)
}

/**
 * Whether a holder is the connection of a process of this host that has died (a SIGKILL while its server process was
 * busy, which ends only once it next reads from the socket): as on SQLite, a dead owner's lock is taken over.
 */
export function leftByDeadProcess(applicationName: string, host: string, alive: (pid: number) => boolean): boolean {
  const m = /^parley (\d+)\.(\d+)@/.exec(applicationName)
  if (!m) return false
  const pid = Number(m[1])
  return connectionName(pid, Number(m[2]), host) === applicationName && !alive(pid)
}

/** Whether a process of this host lives (one of another user's answers EPERM: it lives). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Takes the lock on the connection `query` runs on; answers who holds it when another connection does. */
export async function claimMemberLock(query: LockQuery): Promise<{ held: true } | { heldBy: LockHolder | undefined }> {
  const [key] = await query('SELECT hashtext(coalesce(current_schema(), \'\')) & 2147483647 AS k')
  const schemaKey = Number(key!.k)
  const [got] = await query('SELECT pg_try_advisory_lock($1, $2) AS got', [MEMBER_LOCK_CLASS, schemaKey])
  if (got!.got === 1 || got!.got === true) return { held: true }
  // The holder may have gone between the two statements: then none is named, and the next attempt takes the lock.
  const [holder] = await query(
    `SELECT l.pid AS pid, coalesce(a.application_name, '') AS name, coalesce(host(a.client_addr), 'a local socket') AS client
       FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MEMBER_LOCK_CLASS, schemaKey],
  )
  return { heldBy: holder ? { pid: Number(holder.pid), applicationName: String(holder.name), client: String(holder.client) } : undefined }
}

/** The refusal's text, naming the holder as well as the server lets this role see it. */
export function heldByText(holder: LockHolder | undefined): string {
  if (holder === undefined) return 'another connection holds this member database (its Parley lock)'
  const name = holder.applicationName !== '' ? `"${holder.applicationName}"` : 'a connection'
  return `another process has this member database open: ${name} from ${holder.client} (server process ${holder.pid}); stop it first`
}
