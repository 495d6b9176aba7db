import { STATUS_CODES, type IncomingMessage } from 'node:http'
import type { Context, Next } from 'koa'
import { ParleyError } from '../core/errors.js'
import { shorten } from './query.js'
import { parseAuthority } from '../core/authority.js'

/**
 * Who may drive the member's API, for a server on loopback that any page in the developer's browser can reach: the
 * request must name one of the member's hosts (a page of `evil.example` rebound to 127.0.0.1 names its own), and a
 * page of another origin may read but not change anything nor open a WebSocket. Programs that send no `Origin`
 * (SDKs, curl, test suites) are not pages and pass the origin rule.
 */
export interface AccessPolicy {
  /** The port the API listens on: the loopback names count only with it. */
  readonly port: number
  /** The address the API is bound to, a host name of the member like the loopback ones (when it is not a wildcard). */
  readonly bindHost?: string
  /** api.allowedHosts: further host names, `name` (any port) or `name:port`, lower-case, IPv6 in brackets. */
  readonly allowedHosts: readonly string[]
  /** api.allowedOrigins: origins beyond the member's own whose pages may change things, as `URL.origin` writes them. */
  readonly allowedOrigins: readonly string[]
}

/** The policy of a member's API config: its bind address counts as a host name unless it is a wildcard. */
export function accessPolicy(api: { host: string; port: number; allowedHosts: readonly string[]; allowedOrigins: readonly string[] }): AccessPolicy {
  const wildcard = api.host === '0.0.0.0' || api.host === '::' || api.host === '[::]'
  const bindHost = wildcard ? undefined : api.host.includes(':') && !api.host.startsWith('[') ? `[${api.host.toLowerCase()}]` : api.host.toLowerCase()
  return { port: api.port, ...(bindHost ? { bindHost } : {}), allowedHosts: api.allowedHosts, allowedOrigins: api.allowedOrigins }
}

/** Methods that change nothing: a page of any origin may send them (it cannot read the answer without CORS, which is never granted). */
const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The host-name refusal's wording of the defaults, for a policy. */
const defaultsText = (p: AccessPolicy): string =>
  `localhost, *.localhost, 127.x.x.x, [::1]${p.bindHost && !isLoopbackName(p.bindHost) ? `, ${p.bindHost}` : ''} on port ${p.port}`

/**
 * The first thing every HTTP request meets after the error mapping: a `Host` that is not the member's is a 421, an
 * `Origin` of another site on anything but a read is a 403. Synchronous, so that it adds no promise to a request.
 */
export function accessMiddleware(policy: AccessPolicy) {
  return (ctx: Context, next: Next): Promise<void> => {
    const refusal = refusalOf(ctx.req, policy, READS.has(ctx.method))
    return refusal ? Promise.reject(refusal) : next()
  }
}

/** Why a WebSocket upgrade is refused (a foreign `Host` or any foreign `Origin`), with its status; undefined when it may go on. */
export function upgradeRefusal(req: IncomingMessage, policy: AccessPolicy): { status: number; reason: string; error: ParleyError } | undefined {
  const error = refusalOf(req, policy, false)
  if (!error) return undefined
  const status = error.code === 'MISDIRECTED_REQUEST' ? 421 : 403
  return { status, reason: STATUS_CODES[status] ?? 'Refused', error }
}

function refusalOf(req: IncomingMessage, policy: AccessPolicy, read: boolean): ParleyError | undefined {
  const host = req.headers.host
  // HTTP/1.0 may omit Host (Node requires it of 1.1): no browser sends such a request.
  if (host !== undefined && !hostAllowed(host, policy)) {
    return new ParleyError(
      'MISDIRECTED_REQUEST',
      `Host ${JSON.stringify(shorten(host))} is not one of this member's host names (${defaultsText(policy)}, and api.allowedHosts): ` +
        'a page reached under another name (DNS rebinding) is not served; add the name to api.allowedHosts if the member is served under it',
    )
  }
  const origin = req.headers.origin
  if (read || origin === undefined || originAllowed(origin, policy)) return undefined
  const what = req.headers.upgrade ? 'open a WebSocket' : `${req.method ?? 'send'} here`
  return new ParleyError(
    'FORBIDDEN',
    `a page of origin ${JSON.stringify(shorten(origin))} may not ${what}: only this member's own pages and the origins in api.allowedOrigins may change anything ` +
      '(programs that send no Origin header are not affected)',
  )
}

/** Whether a `Host` header value (`name`, `name:port`, `[v6]:port`) is one of the member's host names. */
export function hostAllowed(header: string, policy: AccessPolicy): boolean {
  const authority = parseAuthority(header)
  return authority !== undefined && authorityAllowed(authority.name, authority.port ?? 80, policy)
}

/** Whether a page of `origin` may change things: one of the member's own (an allowed host on http or https) or api.allowedOrigins. */
export function originAllowed(origin: string, policy: AccessPolicy): boolean {
  // `null` (a sandboxed frame, a file:// page, a redirect across origins) is nobody's origin, and browsers send an
  // origin as its serialisation: anything else (a path, upper case) is not from one.
  if (!URL.canParse(origin)) return false
  const url = new URL(origin)
  if (url.origin !== origin) return false
  if (policy.allowedOrigins.includes(url.origin)) return true
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
  return authorityAllowed(url.hostname, port, policy)
}

function authorityAllowed(name: string, port: number, policy: AccessPolicy): boolean {
  if (port === policy.port && (isLoopbackName(name) || name === policy.bindHost)) return true
  for (const entry of policy.allowedHosts) {
    if (entry === name || entry === `${name}:${port}`) return true
  }
  return false
}

/**
 * Names that always mean this machine: `localhost` and its subdomains (browsers resolve them to loopback whatever DNS
 * says, so they cannot be rebound), 127.0.0.0/8 and ::1. A name that merely resolves to loopback is not among them.
 */
export function isLoopbackName(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost') || name === '[::1]') return true
  const quad = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name)
  return quad !== null && quad.slice(1).every((n) => Number(n) <= 255)
}
