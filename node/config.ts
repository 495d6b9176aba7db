import type { DatabaseConfig } from './db/engine.js'
import { NAME_RE } from './core/names.js'
import { readFileSync } from 'node:fs'
import { dirname, isAbsolute, resolve } from 'node:path'
import type { BatchConfig } from './batch/config.js'
import { MAX_BATCH_PAYLOAD_BYTES, MAX_DATA_PER_MESSAGE, MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_BATCH, MAX_TOPICS_PER_MESSAGE } from './model/index.js'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from './core/limits.js'
import { parseAuthority } from './core/authority.js'
import { DEFAULT_EXCHANGE_QUOTAS, type RetryPolicy } from './exchange/types.js'
import { DEFAULT_RETRY } from './exchange/retry.js'

/**
 * Everything a member node is configured with. Nothing here is special to the local network: pointed at a
 * real Ethereum RPC, a real Kubo daemon and a reachable p2p address, the same node runs on its own machine.
 */
export interface NodeConfig {
  org: string
  node: string
  /** Hex private key of the org's signing account (0x-prefixed). */
  signingKey: string
  chain: { rpc: string; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  api: ApiConfig
  p2p: P2pConfig
  /** Absolute path of the node's data folder (database, blobs). */
  dataDir: string
  /** When batches are sealed; defaults in node/batch/config.ts. */
  batch: Partial<BatchConfig>
  /** What this member accepts from its own API clients; defaults in node/core/limits.ts. */
  limits: RequestLimits
  /**
   * Serves the admin routes under `/admin/v1` (node/api/routes/admin.ts): test controls that hold, release and drop
   * this member's private deliveries and hold its reading of the chain and of IPFS. Off unless the file says so; the
   * local network turns it on. Without it no `/admin/v1` route exists.
   */
  admin: boolean
  /**
   * The built web console served at `/ui` (a directory holding index.html and assets/). The network passes its
   * build's `ui/` on the command line instead (the build changes, the config file does not); without either, node/main.ts
   * looks for `ui/` next to its own entry file.
   */
  uiDir?: string
  /**
   * Where a new database starts from, or is written to once migrated, to spare the next new one the migrations
   * (node/db/fresh-template.ts). Given on the command line by the network (a file of its build); none otherwise.
   */
  dbTemplate?: string
  /** What a peer org may make this member store or hold (config `quotas`); see PeerQuotas below. */
  quotas: PeerQuotas
  /** Which engine holds the member's state (config `database`); see DatabaseConfig below. */
  database: DatabaseConfig
}

export type { DatabaseConfig } from './db/engine.js'

/** The member's p2p endpoint for the private exchange (node/exchange), mutual TLS with its own certificate. */
export interface P2pConfig {
  /** The address it listens on (127.0.0.1 by default; 0.0.0.0 for every interface, with `endpoint` then given). */
  host: string
  port: number
  /** Absolute paths of its certificate and private key (PEM). */
  cert: string
  key: string
  /** How a send to another member is retried before the delivery queue takes over (config `p2p.retry`, parseRetry below). */
  retry: RetryPolicy
  /**
   * The URL the other members reach it at, which its node identity claim registers on chain at the first start
   * (`https://<host>:<port>` unless the file says `p2p.endpoint`): a host behind NAT, or listening on every interface,
   * is reached at a name or address it does not listen on. The certificate must name its host for clients that check
   * names (the exchange itself pins the registered certificate).
   */
  endpoint: string
}

/** Where the member's REST API listens, and whom it answers (node/api/access.ts). */
export interface ApiConfig {
  host: string
  port: number
  /**
   * Host names the API answers beyond its own (localhost, *.localhost, 127.x.x.x and [::1] on its port, and the
   * address it is bound to): `name` for any port or `name:port`, e.g. the name a remote deployment is served under.
   * A request naming another `Host` is refused 421, which names this knob. Empty by default.
   */
  allowedHosts: string[]
  /**
   * Origins (`https://app.example:8443`) whose web pages may change things (anything but GET, HEAD, OPTIONS) and
   * open WebSockets, beyond the member's own pages; others are refused 403, which names this knob. Requests
   * without an Origin (programs) are not affected. Empty by default.
   */
  allowedOrigins: string[]
}

/** The config file as written on disk: paths may be relative to the file, the key may live in its own file. */
export interface NodeConfigFile {
  org: string
  node: string
  signingKeyFile: string
  chain: { rpc: string; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  api: { host?: string; port: number; allowedHosts?: string[]; allowedOrigins?: string[] }
  p2p: { host?: string; port: number; certFile: string; keyFile: string; retry?: Partial<RetryPolicy>; endpoint?: string }
  dataDir: string
  batch?: { size?: number; timeoutMs?: number; payloadLimit?: number }
  limits?: Partial<RequestLimits>
  admin?: boolean
  uiDir?: string
  quotas?: Partial<PeerQuotas>
  database?: { type?: string; url?: string }
}

export class ConfigError extends Error {
  constructor(file: string, problem: string) {
    super(`config ${file}: ${problem}`)
  }
}


export function loadNodeConfig(file: string): NodeConfig {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new ConfigError(file, `cannot read: ${(err as Error).message}`)
  }
  return parseNodeConfig(raw, file)
}

export function parseNodeConfig(raw: unknown, file: string): NodeConfig {
  const base = dirname(resolve(file))
  const at = (p: string): string => (isAbsolute(p) ? p : resolve(base, p))
  const fail = (problem: string): never => {
    throw new ConfigError(file, problem)
  }
  const obj = (v: unknown, path: string): Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : fail(`${path} must be an object`)
  const str = (v: unknown, path: string): string => (typeof v === 'string' && v.length > 0 ? v : fail(`${path} must be a non-empty string`))
  const port = (v: unknown, path: string): number =>
    Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536 ? (v as number) : fail(`${path} must be a port number`)
  const url = (v: unknown, path: string, protocols: string[]): string => {
    const s = str(v, path)
    let u: URL
    try {
      u = new URL(s)
    } catch {
      return fail(`${path} is not a URL: ${s}`)
    }
    if (!protocols.includes(u.protocol)) fail(`${path} must use ${protocols.join(' or ')}: ${s}`)
    return s.replace(/\/+$/, '')
  }

  const c = obj(raw, 'config')
  const org = str(c.org, 'org')
  const node = str(c.node, 'node')
  if (!NAME_RE.test(org)) fail(`org "${org}" must be 1-64 letters, digits, '.', '_' or '-'`)
  if (!NAME_RE.test(node)) fail(`node "${node}" must be 1-64 letters, digits, '.', '_' or '-'`)

  const keyFile = at(str(c.signingKeyFile, 'signingKeyFile'))
  let signingKey: string
  try {
    signingKey = readFileSync(keyFile, 'utf8').trim()
  } catch (err) {
    return fail(`cannot read signingKeyFile ${keyFile}: ${(err as Error).message}`)
  }
  if (!/^0x[0-9a-fA-F]{64}$/.test(signingKey)) fail(`signingKeyFile ${keyFile} must hold a 0x-prefixed 32-byte hex private key`)

  const chain = obj(c.chain, 'chain')
  const contract = str(chain.contract, 'chain.contract')
  if (!/^0x[0-9a-fA-F]{40}$/.test(contract)) fail(`chain.contract is not an address: ${contract}`)
  const firstBlock = chain.firstBlock ?? 0
  if (!Number.isInteger(firstBlock) || (firstBlock as number) < 0) fail('chain.firstBlock must be a block number')

  const ipfs = obj(c.ipfs, 'ipfs')
  const api = obj(c.api, 'api')
  const p2p = obj(c.p2p, 'p2p')
  return {
    org,
    node,
    signingKey,
    chain: { rpc: url(chain.rpc, 'chain.rpc', ['http:', 'https:']), contract: contract.toLowerCase(), firstBlock: firstBlock as number },
    ipfs: { api: url(ipfs.api, 'ipfs.api', ['http:', 'https:']), gateway: url(ipfs.gateway, 'ipfs.gateway', ['http:', 'https:']) },
    api: {
      host: api.host === undefined ? '127.0.0.1' : str(api.host, 'api.host'),
      port: port(api.port, 'api.port'),
      allowedHosts: list(api.allowedHosts, 'api.allowedHosts', fail).map((h, i) => allowedHost(h, `api.allowedHosts[${i}]`, fail)),
      allowedOrigins: list(api.allowedOrigins, 'api.allowedOrigins', fail).map((o, i) => allowedOrigin(o, `api.allowedOrigins[${i}]`, fail)),
    },
    p2p: parseP2p(p2p, { str, port, url, at, fail }),
    dataDir: at(str(c.dataDir, 'dataDir')),
    batch: parseBatchConfig(c.batch, fail),
    limits: parseRequestLimits(c.limits, fail),
    admin: c.admin === undefined || c.admin === null ? false : typeof c.admin === 'boolean' ? c.admin : fail('admin must be true or false'),
    ...(c.uiDir === undefined || c.uiDir === null ? {} : { uiDir: at(str(c.uiDir, 'uiDir')) }),
    quotas: parsePeerQuotas(c.quotas, fail),
    database: parseDatabaseConfig(c.database, fail),
  }
}

/** The `database` section of a member config (shared by the move command, which writes one). */
export function parseDatabaseConfig(v: unknown, fail: (problem: string) => never): DatabaseConfig {
  if (v === undefined || v === null) return { type: 'sqljs' }
  if (typeof v !== 'object' || Array.isArray(v)) return fail('database must be an object {"type": "sqljs"} or {"type": "postgres", "url": "postgres://..."}')
  const d = v as Record<string, unknown>
  for (const k of Object.keys(d)) if (k !== 'type' && k !== 'url') fail(`database.${k} is not a database setting; known: type, url`)
  if (d.type === undefined || d.type === 'sqljs') {
    if (d.url !== undefined) fail('database.url is only for database.type "postgres"')
    return { type: 'sqljs' }
  }
  if (d.type !== 'postgres') return fail(`database.type must be "sqljs" or "postgres": ${JSON.stringify(d.type)}`)
  if (typeof d.url !== 'string' || d.url === '') return fail('database.url must be a postgres:// URL naming the member\'s database')
  const u = URL.canParse(d.url) ? new URL(d.url) : undefined
  if (!u || (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:')) return fail(`database.url must use postgres: or postgresql: (postgres://user:password@host:port/dbname)`)
  if (u.hostname === '') fail('database.url must name a host')
  // One database per member: without a name, pg would pick the user's, which other members may share.
  if (u.pathname.length < 2 || u.pathname.slice(1).includes('/')) fail('database.url must name the member\'s database (postgres://host:port/dbname)')
  return { type: 'postgres', url: d.url }
}

/** Whether a listening address is every address (0.0.0.0 or ::), which peers cannot be told to reach. */
export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::'
}

function parseP2p(
  p2p: Record<string, unknown>,
  r: { str(v: unknown, path: string): string; port(v: unknown, path: string): number; url(v: unknown, path: string, protocols: string[]): string; at(p: string): string; fail(problem: string): never },
): P2pConfig {
  const host = p2p.host === undefined ? '127.0.0.1' : r.str(p2p.host, 'p2p.host')
  const port = r.port(p2p.port, 'p2p.port')
  if (isWildcardHost(host) && p2p.endpoint === undefined) r.fail(`p2p.endpoint is required when p2p.host is ${host}: it is the URL the other members reach this member at (https://name:${port})`)
  let endpoint = `https://${host.includes(':') ? `[${host}]` : host}:${port}`
  if (p2p.endpoint !== undefined) {
    endpoint = r.url(p2p.endpoint, 'p2p.endpoint', ['https:'])
    const u = new URL(endpoint)
    if (u.pathname !== '/' || u.search !== '' || u.username !== '' || u.hash !== '') r.fail(`p2p.endpoint must be https://host:port, with no path: ${endpoint}`)
  }
  return { host, port, cert: r.at(r.str(p2p.certFile, 'p2p.certFile')), key: r.at(r.str(p2p.keyFile, 'p2p.keyFile')), retry: parseRetry(p2p.retry, r.fail), endpoint }
}

function list(v: unknown, path: string, fail: (problem: string) => never): string[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) return fail(`${path} must be a list of non-empty strings`)
  return v as string[]
}

/** A host name as a `Host` header carries it, `name` or `name:port` (IPv6 in brackets), kept lower-case. */
function allowedHost(entry: string, path: string, fail: (problem: string) => never): string {
  const a = parseAuthority(entry)
  if (!a) return fail(`${path} must be a host name, optionally with :port (IPv6 in brackets): ${JSON.stringify(entry)}`)
  return a.port === undefined ? a.name : `${a.name}:${a.port}`
}

/** An origin as browsers send it: http(s), a host, an optional port, nothing after. */
function allowedOrigin(entry: string, path: string, fail: (problem: string) => never): string {
  const url = URL.canParse(entry) ? new URL(entry) : undefined
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') {
    return fail(`${path} must be an origin such as https://app.example:8443 (scheme, host, optional port; no path): ${JSON.stringify(entry)}`)
  }
  return url.origin
}

function parseRequestLimits(v: unknown, fail: (problem: string) => never): RequestLimits {
  const out = wholeNumbers(v, 'limits', DEFAULT_REQUEST_LIMITS, { noun: 'limit' }, fail, (k, value) => {
    const ceiling = REQUEST_LIMIT_CEILINGS[k]
    if (value > ceiling.value) fail(`limits.${k} must be at most ${ceiling.value} (${ceiling.why})`)
  })
  if (out.inFlightBodyBytes < out.jsonBodyBytes) fail(`limits.inFlightBodyBytes (${out.inFlightBodyBytes}) must be at least limits.jsonBodyBytes (${out.jsonBodyBytes}), or no body of the largest size could ever be read`)
  if (out.addressBodyBytes < out.jsonBodyBytes) fail(`limits.addressBodyBytes (${out.addressBodyBytes}) must be at least limits.jsonBodyBytes (${out.jsonBodyBytes}), or no client could send a body of the largest size`)
  if (out.urlBytes > out.headerBytes) fail(`limits.urlBytes (${out.urlBytes}) must be at most limits.headerBytes (${out.headerBytes}): the URL is part of the request head`)
  return out
}

function parseBatchConfig(v: unknown, fail: (problem: string) => never): Partial<BatchConfig> {
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' || Array.isArray(v)) return fail('batch must be an object {size, timeoutMs, payloadLimit}')
  const b = v as Record<string, unknown>
  const out: Partial<BatchConfig> = {}
  for (const k of ['size', 'timeoutMs', 'payloadLimit'] as const) {
    if (b[k] === undefined) continue
    if (!Number.isInteger(b[k]) || (b[k] as number) < (k === 'timeoutMs' ? 0 : 1)) fail(`batch.${k} must be a whole number${k === 'timeoutMs' ? '' : ' of at least 1'}`)
    out[k] = b[k] as number
  }
  // Receivers refuse a batch of more messages: a member may not be set to send one.
  if (out.size !== undefined && out.size > MAX_MESSAGES_PER_BATCH) fail(`batch.size must be at most ${MAX_MESSAGES_PER_BATCH} messages (members refuse batches of more)`)
  // A batch of many messages may pass its estimate a little; well under what receivers read, it never passes that.
  if (out.payloadLimit !== undefined && out.payloadLimit > MAX_PAYLOAD_LIMIT) {
    fail(`batch.payloadLimit must be at most ${MAX_PAYLOAD_LIMIT} bytes (members refuse batches over ${MAX_BATCH_PAYLOAD_BYTES})`)
  }
  return out
}

const MAX_PAYLOAD_LIMIT = 16 * 1024 * 1024

/**
 * How high a member may set each limit. Those that every member applies to what peers send stop at the network's
 * value, so what this member accepts every member accepts; the rest stop where one request would cost more memory
 * than a member should give it.
 */
const REQUEST_LIMIT_CEILINGS: Readonly<Record<keyof RequestLimits, { value: number; why: string }>> = {
  jsonBodyBytes: { value: MAX_BATCH_PAYLOAD_BYTES, why: 'a body is held in memory while it is parsed' },
  valueBytes: { value: MAX_MESSAGE_BYTES, why: 'the largest value a batch can carry to other members' },
  uploadBytes: { value: Number.MAX_SAFE_INTEGER, why: 'blobs are streamed to disk' },
  headerBytes: { value: 1024 * 1024, why: 'request heads are held in memory' },
  urlBytes: { value: 1024 * 1024, why: 'request heads are held in memory' },
  dataPerMessage: { value: MAX_DATA_PER_MESSAGE, why: 'other members reject a message with more' },
  topicsPerMessage: { value: MAX_TOPICS_PER_MESSAGE, why: 'other members reject a message with more' },
  idempotencyKeyChars: { value: 4096, why: 'a key is stored and compared with every message that has one' },
  inFlightBodyBytes: { value: 16 * 1024 * 1024 * 1024, why: 'request bodies are held in memory while they are read' },
  bodyIdleMs: { value: 3_600_000, why: 'an idle body holds its share of the in-flight budget' },

  // What one client may hold of the member (node/core/pipelining.ts, node/api/body-budget.ts, node/api/discard.ts).
  queuedRequestsPerConnection: { value: 1000, why: 'each waiting request is held in memory until its turn' },
  connections: { value: 65_536, why: 'each connection holds its parser and waiting requests in memory' },
  connectionsPerAddress: { value: 65_536, why: 'each connection holds its parser and waiting requests in memory' },
  addressBodyBytes: { value: 16 * 1024 * 1024 * 1024, why: 'request bodies are held in memory while they are read' },
  bodyDeadlineMs: { value: 3_600_000, why: 'a slow body holds its share of the in-flight budget until then' },
  bodyStalledMs: { value: 3_600_000, why: 'a stalled body keeps its share of the budget against others until then' },
  discardBodyBytes: { value: 16 * 1024 * 1024 * 1024, why: 'a refused body is read to this length, costing the member the time to read it' },
}

const GiB = 1024 * 1024 * 1024
const HOUR_MS = 3_600_000

/**
 * Quotas on what other members' nodes may make this member store or hold, per member (config `quotas`; restart the
 * member to apply). A peer over one is answered with an error naming the knob (`quotas.<name>`), and the refusal is
 * logged under the same name. docs/operations.md lists them with what the peer sees.
 */
export interface PeerQuotas {
  /** Bytes of blobs received from one org's nodes that no stored data item refers to; past it a blob is refused 507. */
  unreferencedBlobBytesPerOrg: number
  /** How long such a blob is kept (ms); then it is deleted, by the periodic sweep or the next start's. */
  unreferencedBlobMs: number
  /** Requests one org may have in flight here at once, over all its nodes; past it 429. */
  inFlightRequestsPerOrg: number
  /** Bytes of batch bodies one org may have held here at once (read into memory), over all its nodes; past it 429. */
  inFlightBatchBytesPerOrg: number
  /** How long a private batch received but never pinned is kept (ms); then it goes, with its pending messages and data. */
  unpinnedBatchMs: number
  /**
   * Bytes (manifest and data values) of private batches from one org's nodes stored here that no pin of theirs names
   * yet; past it a batch is refused 507 and its sender delivers it again later.
   */
  unpinnedBatchBytesPerOrg: number
  /** Open p2p connections from one client certificate; past it the connection's requests get 429 and it closes. */
  connectionsPerCertificate: number
  /** Open p2p connections from the registered nodes of one org together; the same refusal. */
  connectionsPerOrg: number
  /** Open p2p connections from certificates no node registered (each answered 401), all of them together. */
  unregisteredConnections: number
  /**
   * Open p2p connections in all, handshakes included; past it the oldest connection still in its TLS handshake is
   * closed for the new one, or the new one dropped when every open connection completed its handshake.
   */
  connections: number
  /** Open p2p connections from one remote address that have not completed their TLS handshake; past it one is dropped at once. */
  unidentifiedConnectionsPerAddress: number
  /** Refusal log lines of the p2p endpoint per minute, over all peers and certificates; the rest are counted in one line. */
  refusalLinesPerMinute: number
  /** How often the periodic sweep looks for expired blobs and batches (ms). */
  sweepIntervalMs: number
}

/** The exchange's quotas take the defaults it applies when not configured (node/exchange/types.ts). */
const X = DEFAULT_EXCHANGE_QUOTAS
export const DEFAULT_PEER_QUOTAS: Readonly<PeerQuotas> = {
  unreferencedBlobBytesPerOrg: GiB,
  unreferencedBlobMs: 24 * HOUR_MS,
  inFlightRequestsPerOrg: X.inFlightRequestsPerOrg,
  inFlightBatchBytesPerOrg: X.inFlightBatchBytesPerOrg,
  unpinnedBatchMs: 24 * HOUR_MS,
  unpinnedBatchBytesPerOrg: MAX_BATCH_PAYLOAD_BYTES,
  connectionsPerCertificate: X.connectionsPerCertificate,
  connectionsPerOrg: X.connectionsPerOrg,
  unregisteredConnections: X.unregisteredConnections,
  connections: X.connections,
  unidentifiedConnectionsPerAddress: X.unidentifiedConnectionsPerAddress,
  refusalLinesPerMinute: X.refusalLinesPerMinute,
  sweepIntervalMs: 10 * 60_000,
}

function parsePeerQuotas(v: unknown, fail: (problem: string) => never): PeerQuotas {
  const out = wholeNumbers(v, 'quotas', DEFAULT_PEER_QUOTAS, { noun: 'quota' }, fail)
  // A batch of the network's largest size must fit, or a peer's honest batch could never be taken.
  if (out.inFlightBatchBytesPerOrg < MAX_BATCH_PAYLOAD_BYTES) fail(`quotas.inFlightBatchBytesPerOrg (${out.inFlightBatchBytesPerOrg}) must be at least ${MAX_BATCH_PAYLOAD_BYTES}, the largest batch a member may send`)
  if (out.unpinnedBatchBytesPerOrg < MAX_BATCH_PAYLOAD_BYTES) fail(`quotas.unpinnedBatchBytesPerOrg (${out.unpinnedBatchBytesPerOrg}) must be at least ${MAX_BATCH_PAYLOAD_BYTES}, the largest batch a member may send`)
  if (out.connectionsPerOrg < out.connectionsPerCertificate) fail(`quotas.connectionsPerOrg (${out.connectionsPerOrg}) must be at least quotas.connectionsPerCertificate (${out.connectionsPerCertificate})`)
  return out
}

/**
 * `p2p.retry`: how a send to another member (a batch, a blob) is retried before it gives up UNAVAILABLE and the
 * delivery queue takes over with its own, durable retries. `attempts` (the first included, at least 1), `firstWaitMs`
 * (the wait after the first failure, doubling each time) and `maxWaitMs` (the longest wait); defaults in
 * node/exchange/retry.ts: 7 attempts, 0.5 s to 16 s, 31.5 s of waiting in all.
 */
function parseRetry(v: unknown, fail: (problem: string) => never): RetryPolicy {
  const out = wholeNumbers(v, 'p2p.retry', DEFAULT_RETRY, { noun: 'setting', shape: ' {attempts, firstWaitMs, maxWaitMs}' }, fail)
  if (out.maxWaitMs < out.firstWaitMs) fail(`p2p.retry.maxWaitMs (${out.maxWaitMs}) must be at least p2p.retry.firstWaitMs (${out.firstWaitMs})`)
  return out
}

/**
 * A section of settings that are each a whole number of at least 1 (`limits`, `quotas`, `p2p.retry`): the defaults,
 * with those the file gives in their place. `noun` names one setting where an unknown key is refused, `shape` follows
 * "must be an object", and `check` refuses a value past what the section allows.
 */
function wholeNumbers<T extends { [k in keyof T]: number }>(
  v: unknown,
  path: string,
  defaults: Readonly<T>,
  words: { noun: string; shape?: string },
  fail: (problem: string) => never,
  check?: (k: keyof T, value: number) => void,
): T {
  if (v === undefined || v === null) return { ...defaults }
  if (typeof v !== 'object' || Array.isArray(v)) return fail(`${path} must be an object${words.shape ?? ''}`)
  const out: T = { ...defaults }
  for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
    if (!Object.hasOwn(defaults, k)) fail(`${path}.${k} is not a ${words.noun}; known: ${Object.keys(defaults).join(', ')}`)
    if (!Number.isSafeInteger(value) || (value as number) < 1) fail(`${path}.${k} must be a whole number of at least 1`)
    check?.(k as keyof T, value as number)
    out[k as keyof T] = value as T[keyof T]
  }
  return out
}
