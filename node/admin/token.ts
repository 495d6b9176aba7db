import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The secret the test controls (`/admin/v1`) ask for, as `Authorization: Bearer <token>`: a file in the member's data
 * folder that only the member's user can read. A web page can reach the member's port but not read the file, and a
 * browser never adds such a header to a request of another origin without a preflight the API does not grant; the
 * local network's CLI, `startNetwork()`'s handle and the suite helper read it from the state folder.
 */
export const ADMIN_TOKEN_FILE = 'admin-token'

/** Tokens shorter than this are not secrets: one is made anew. */
const MIN_TOKEN_CHARS = 32

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, ADMIN_TOKEN_FILE)
}

/**
 * The member's admin token: the one in its data folder, or a new one (32 random bytes, hex) written there on first
 * start. The file is kept at mode 0600 whoever wrote it. A token given by the operator (any 32+ printable characters)
 * is kept as it is, so a deployment may set its own.
 */
export function ensureAdminToken(dataDir: string): string {
  const file = adminTokenPath(dataDir)
  const existing = readToken(file)
  if (existing !== undefined) {
    chmodSync(file, 0o600)
    return existing
  }
  mkdirSync(dataDir, { recursive: true })
  const token = randomBytes(32).toString('hex')
  writeFileSync(file, token + '\n', { mode: 0o600 })
  chmodSync(file, 0o600)
  return token
}

/** The token in `file`, or undefined when there is none fit to use (missing, empty, short, or not printable ASCII). */
export function readToken(file: string): string | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  return text.length >= MIN_TOKEN_CHARS && /^[\x21-\x7e]+$/.test(text) ? text : undefined
}

/** Whether an `Authorization` header carries `token` as a bearer token; compared in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header)
  if (!m) return false
  // Digests of equal length, so that neither the comparison nor its length check tells how much matched.
  return timingSafeEqual(createHash('sha256').update(m[1]!).digest(), createHash('sha256').update(token).digest())
}
