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

/** The lock taken, by this connection's server process; or who holds it (undefined: it went meanwhile). */
export type Claim = { held: Backend } | { heldBy: LockHolder | undefined }

/** The lock's second key, `k`: the schema's, positive (pg_locks shows it as an oid). */
export const SCHEMA_KEY_SQL = "SELECT hashtext(coalesce(current_schema(), '')) & 2147483647 AS k"

/** Runs one statement on the member's connection and answers its rows. */
export type LockQuery = (text: string, values?: unknown[]) => Promise<Record<string, unknown>[]>

/** A server process: its id and when it started (ids are reused; the pair is not). */
export interface Backend {
  pid: number
  since: string
}

/** Who holds the lock: the server process behind its connection, and what that connection calls itself. */
export interface LockHolder extends Backend {
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

/**
 * The URL without an `application_name` of its own, which pg would put before the member's; the rest as written (pg
 * reads host-less URLs that WHATWG's parser refuses, so the query is edited as text).
 */
export function withoutApplicationName(url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const kept = url
    .slice(q + 1)
    .split('&')
    .filter((p) => !/^application_name(=|$)/.test(p))
  return kept.length > 0 ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q)
}

/** Takes the lock on the connection `query` runs on; answers who holds it when another connection does. */
export async function claimMemberLock(query: LockQuery): Promise<Claim> {
  const [got] = await query(
    `SELECT pg_try_advisory_lock($1, key.k) AS got, key.k AS k, pg_backend_pid() AS pid,
            (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS since
       FROM (${SCHEMA_KEY_SQL}) AS key`,
    [MEMBER_LOCK_CLASS],
  )
  if (got!.got === 1 || got!.got === true) return { held: { pid: Number(got!.pid), since: String(got!.since) } }
  const schemaKey = Number(got!.k)
  // The holder may have gone between the two statements: then none is named, and the next attempt takes the lock.
  const [holder] = await query(
    `SELECT l.pid AS pid, coalesce(a.backend_start::text, '') AS since, coalesce(a.application_name, '') AS name, coalesce(host(a.client_addr), 'a local socket or an address this role may not see') AS client
       FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MEMBER_LOCK_CLASS, schemaKey],
  )
  return { heldBy: holder ? { pid: Number(holder.pid), since: String(holder.since), applicationName: String(holder.name), client: String(holder.client) } : undefined }
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
  claim: () => Promise<Claim>
  /** Ends a server process (waiting a little for it to go); never throws. */
  terminate: (pid: number) => Promise<void>
  /** The server process of this session's connection that last held the lock, if any. */
  previous: Backend | undefined
  /** Told, at each attempt, that the lock waits for this session's previous connection to end. */
  waitingForOwn: (holder: LockHolder) => void
  closed: () => boolean
  sleep: (ms: number) => Promise<void>
  /**
   * Until when another holder is waited for (epoch ms): on a session's first open, whose predecessor may hold it
   * until its server process notices it went (a member restarted after a SIGKILL, while a statement of up to 20 s
   * ran; its host gone, which the keepalives tell within ~25 s). Undefined once the session was connected: another
   * holder then took the database over.
   */
  waitForOthersUntil: number | undefined
}

/**
 * Takes the lock on a new connection. One this session's previous connection still holds (lost to this process, not
 * yet ended by the server, or hung) is ended and waited for: while it is, nothing is written, so that no other
 * process could ever write beside this one. Another holder is waited for only on a first open, up to its deadline.
 */
export async function settleMemberLock(x: LockSettling): Promise<{ held: Backend } | { refused: LockHolder | undefined } | { closed: true }> {
  // A holder that leaves between the claim and the look at it is claimed again, a few times.
  let vanished = 0
  for (;;) {
    const claim = await x.claim()
    // Closed meanwhile: the caller ends the connection, and with it a lock just taken.
    if (x.closed()) return { closed: true }
    if ('held' in claim) return claim
    const holder = claim.heldBy
    if (holder === undefined) {
      if (++vanished > 20) return { refused: undefined }
    } else if (x.previous !== undefined && holder.pid === x.previous.pid && holder.since === x.previous.since) {
      await x.terminate(holder.pid)
      x.waitingForOwn(holder)
    } else if (x.waitForOthersUntil === undefined || Date.now() >= x.waitForOthersUntil) {
      return { refused: holder }
    }
    await x.sleep(LOCK_RETRY_MS)
    if (x.closed()) return { closed: true }
  }
}
