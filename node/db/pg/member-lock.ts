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
 * The name a connection gives itself (`application_name`): the process, the session and the host, for an operator to
 * find it (`pg_stat_activity`) and for the refusal to name it. Only a name: this session's own earlier connections are
 * known by their server process ids. ASCII, at most 63 bytes, as PostgreSQL keeps it.
 */
export function connectionName(pid: number, session: number, host: string): string {
  return `parley ${pid}.${session}@${host}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 63)
}

/** The URL without an `application_name` of its own, which pg would put before the member's. */
export function withoutApplicationName(url: string): string {
  if (!/[?&]application_name=/.test(url)) return url
  try {
    const u = new URL(url)
    u.searchParams.delete('application_name')
    return u.toString()
  } catch {
    return url
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
    `SELECT l.pid AS pid, coalesce(a.application_name, '') AS name, coalesce(host(a.client_addr), 'a local socket or an address this role may not see') AS client
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

/** How often a claim is tried again while the lock is held by what should soon be gone. */
export const LOCK_RETRY_MS = 250

/** What settling the lock on a new connection needs: the claim and the ending of a server process, on that connection. */
export interface LockSettling {
  claim: () => Promise<{ held: true } | { heldBy: LockHolder | undefined }>
  /** Ends a server process (waiting a little for it to go); never throws. */
  terminate: (pid: number) => Promise<void>
  /** Whether a server process was one of this session's earlier connections. */
  own: (pid: number) => boolean
  /** Told, at each attempt, that the lock waits for this session's previous connection to end. */
  waitingForOwn: (holder: LockHolder) => void
  closed: () => boolean
  sleep: (ms: number) => Promise<void>
  /**
   * Until when another holder is waited for (epoch ms): on a session's first open, whose predecessor (a member
   * restarted after a SIGKILL) may hold it until its server process notices, within a statement's time at most.
   * Undefined once the session was connected: another holder then took the database over.
   */
  waitForOthersUntil: number | undefined
}

/**
 * Takes the lock on a new connection. One this session's previous connection still holds (lost to this process, not
 * yet ended by the server, or hung) is ended and waited for: while it is, nothing is written, so that no other
 * process could ever write beside this one. Another holder is waited for only on a first open, up to its deadline.
 */
export async function settleMemberLock(x: LockSettling): Promise<{ held: true } | { refused: LockHolder | undefined } | { closed: true }> {
  // A holder that leaves between the claim and the look at it is claimed again, a few times.
  let vanished = 0
  for (;;) {
    const claim = await x.claim()
    if ('held' in claim) return claim
    if (x.closed()) return { closed: true }
    const holder = claim.heldBy
    if (holder === undefined) {
      if (++vanished > 20) return { refused: undefined }
    } else if (x.own(holder.pid)) {
      await x.terminate(holder.pid)
      x.waitingForOwn(holder)
    } else if (x.waitForOthersUntil === undefined || Date.now() >= x.waitForOthersUntil) {
      return { refused: holder }
    }
    await x.sleep(LOCK_RETRY_MS)
    if (x.closed()) return { closed: true }
  }
}
