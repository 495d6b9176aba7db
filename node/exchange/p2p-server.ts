import https from 'node:https'
import { X509Certificate } from 'node:crypto'
import type { Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { errorMessage } from '../core/errors.js'
import { closeServer, listen } from '../core/listen.js'
import { DEFAULT_QUEUED_REQUESTS, inTurn, OVERFLOW_REQUESTS } from '../core/pipelining.js'
import { ConnectionCaps, type ConnectionLimits } from './connection-caps.js'
import { RefusalLog } from './refusal-log.js'
import { OpenConnections } from './unidentified-connections.js'
import { DEFAULT_EXCHANGE_QUOTAS, type ExchangeQuotas } from './types.js'

export interface P2pServer {
  url: string
  /**
   * Replaces the set of peer certificates whose holders may connect (self-signed: each is its own CA). A certificate
   * that does not parse is left out (logged once when `log` is given), never thrown for. `known` gives fingerprints
   * the caller has already computed, by certificate, so that each is parsed once in the process.
   */
  trust(peerCerts: readonly string[], known?: ReadonlyMap<string, string>): void
  /** Stops at once: open connections are dropped. */
  close(): Promise<void>
  /**
   * Stops gracefully: no new connections, new requests on open ones answered 503 `UNAVAILABLE`, requests in flight
   * let finish for up to `graceMs`, then every connection is dropped. Never rejects.
   */
  drain(graceMs: number): Promise<void>
}

/** A client the TLS layer authenticated and whose certificate is one of the registered ones, byte for byte. */
export interface P2pPeer {
  /** The subject's O. */
  org: string
  /** The certificate presented (DER, base64). */
  cert: string
  /** Its SHA-256 fingerprint, as `X509Certificate.fingerprint256` writes it (`AB:CD:...`). */
  fingerprint: string
}

/**
 * Answers every request but the ping, once the client is known. A request carrying `Expect: 100-continue` reaches the
 * handler before its body is sent: the handler calls `res.writeContinue()` once it means to read the body, or
 * answers without it (then set `connection: close`, the body never came).
 */
export type P2pHandler = (req: IncomingMessage, res: ServerResponse, peer: P2pPeer) => void

export interface P2pServerOptions {
  host: string
  port: number
  cert: string
  key: string
  handler?: P2pHandler
  /**
   * Where an unknown client certificate is refused. `'tls'` (the default): one that chains to no registered
   * certificate fails the handshake, silently. `'http'`: the handshake still asks for a certificate and checks that
   * the client holds its key, but completes whatever it is; the request is then answered 401 and logged, so that a
   * refusal is visible to both sides. Either way only a registered certificate, byte for byte, gets past 401.
   */
  unknownCertificates?: 'tls' | 'http'
  /**
   * A line per refused client (401, or a connection over a cap), at most one a minute per certificate and
   * `refusalLinesPerMinute` in all (`refusals`), and one per unparsable certificate handed to `trust`.
   */
  log?: (line: string) => void
  /** Where refusal lines go, bounded per minute; shared with the handler's. Default: `log`, bounded by the default quota. */
  refusals?: RefusalLog
  /** Caps on open connections: per certificate, per org, for unregistered certificates, and in all (default: the quotas'). */
  connections?: ConnectionLimits & { total: number; unidentifiedPerAddress?: number }
  /** The org of the registered node whose certificate has this fingerprint (else the certificate's subject O). */
  orgOf?: (fingerprint: string) => string | undefined
  /**
   * A socket with no traffic for this long is dropped (a stalled peer cannot pin it; default 60 s). A handler that
   * takes longer than this after the body ended loses its answer: the client sees the connection drop.
   */
  idleTimeoutMs?: number
  /**
   * Requests that may wait on one connection behind the one being served (default 4): a peer's connection is served
   * one request at a time, and past this it is not read until they are (node/core/pipelining.ts).
   */
  queuedRequestsPerConnection?: number
  /** Called before a connection is taken and before each request: the place for a lazy caller's `trust`. */
  beforeUse?: () => void
}

/** The caps on open connections that `quotas` set (P2pServerOptions.connections). */
export function connectionLimits(q: ExchangeQuotas): NonNullable<P2pServerOptions['connections']> {
  return { perCertificate: q.connectionsPerCertificate, perOrg: q.connectionsPerOrg, unregistered: q.unregisteredConnections, total: q.connections, unidentifiedPerAddress: q.unidentifiedConnectionsPerAddress }
}

/** How long a connection may take to complete its TLS handshake; a member's takes milliseconds. */
export const HANDSHAKE_TIMEOUT_MS = 3_000

/** The ping route a peer uses to see whether this endpoint is up. */
export const PING_PATH = '/api/v1/ping'

/**
 * The member's peer-to-peer endpoint: HTTPS with mutual TLS. A client must present a certificate that one of the
 * registered member nodes published; the sending org is read from that certificate, never from the request body.
 */
export async function startP2pServer(opts: P2pServerOptions): Promise<P2pServer> {
  const log = opts.log ?? (() => {})
  const own = new X509Certificate(opts.cert)
  let ca = [opts.cert]
  /** Whether `ca` changed since the server's TLS context was made. */
  let contextStale = false
  // TLS checks that a client certificate chains to a trusted one; a trusted member's certificate could sign another
  // that names any org. Only a certificate some node registered, byte for byte, identifies a sender.
  let registered = new Set([own.fingerprint256])
  const unparsable = new Set<string>()
  /** The fingerprint of each trusted certificate, by its PEM: parsed once, not at every change of the peers. */
  const fingerprints = new Map<string, string>()
  const q = DEFAULT_EXCHANGE_QUOTAS
  const refusals = opts.refusals ?? new RefusalLog({ perMinute: q.refusalLinesPerMinute, log })
  const limits = opts.connections ?? connectionLimits(q)
  const caps = new ConnectionCaps(limits, { registered: (fingerprint) => registered.has(fingerprint), ...(opts.orgOf ? { orgOf: opts.orgOf } : {}) })
  let stopping = false
  const active = new Set<ServerResponse>()
  let idle: (() => void) | undefined

  /** The caller's lazy update of the peers; a failure leaves them as they were (thrown here it would end the process). */
  const beforeUse = (): void => {
    try {
      opts.beforeUse?.()
    } catch (err) {
      log(`p2p: the peers could not be brought up to date: ${errorMessage(err)}`)
    }
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    beforeUse()
    active.add(res)
    res.once('close', () => {
      active.delete(res)
      if (active.size === 0) idle?.()
    })
    const socket = req.socket as TLSSocket
    const peerCert = socket.getPeerCertificate(false)
    const fingerprint = peerCert?.fingerprint256
    const refusal = !fingerprint
      ? 'no client certificate'
      : !registered.has(fingerprint)
        ? 'the client certificate is not one a registered node published'
        : !socket.authorized
          ? `the client certificate does not verify: ${String(socket.authorizationError)}`
          : undefined
    const org = typeof peerCert?.subject?.O === 'string' ? peerCert.subject.O : undefined
    const who = fingerprint ? `certificate ${subjectLine(peerCert.subject)} sha256 ${fingerprint}` : 'a client without a certificate'
    // Over a cap first: a stranger then hears which cap, and its connection closes.
    const capped = caps.refusalOf(socket)
    if (capped) {
      refusals.refused(`p2p: refused ${req.method} ${req.url} from ${who} at ${socket.remoteAddress}: ${capped}`, `capped ${fingerprint}`)
      res.setHeader('connection', 'close')
      refuse(req, res, 429, capped)
      return
    }
    if (refusal || !org) {
      const reason = refusal ?? 'client certificate names no organization'
      refusals.refused(`p2p: refused ${req.method} ${req.url} from ${who} at ${socket.remoteAddress}: ${reason}`, fingerprint ?? `no certificate from ${socket.remoteAddress}`)
      refuse(req, res, 401, `UNAUTHORIZED: ${reason}`)
      return
    }
    if (stopping) {
      refuse(req, res, 503, 'UNAVAILABLE: this node is stopping')
      return
    }
    if (req.url === PING_PATH && (req.method === 'HEAD' || req.method === 'GET')) {
      res.writeHead(204).end()
      return
    }
    if (opts.handler) {
      opts.handler(req, res, { org, cert: peerCert.raw.toString('base64'), fingerprint: fingerprint! })
      return
    }
    refuse(req, res, 404, `NOT_FOUND: no route for ${req.method} ${req.url}`)
  }

  const queued = opts.queuedRequestsPerConnection ?? DEFAULT_QUEUED_REQUESTS
  const served = inTurn(onRequest, queued, {
    onOverflow: (socket, waiting) =>
      refusals.refused(`p2p: closed a connection from ${socket.remoteAddress}: ${waiting} requests were waiting behind the one being served, past ${queued} and the ${OVERFLOW_REQUESTS} more a peer may have in flight`, `overflow ${socket.remoteAddress}`),
  })
  const server = https.createServer(
    {
      cert: opts.cert,
      key: opts.key,
      ca,
      requestCert: true,
      rejectUnauthorized: opts.unknownCertificates !== 'http',
      // A connection that never completes its handshake holds a place of the total until then (OpenConnections).
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      // The request time limit would cut a long blob upload; the idle timeout below stops a stalled one instead.
      requestTimeout: 0,
      headersTimeout: 30_000,
    },
    served,
  )
  // With a listener, Node no longer sends `100 Continue` on its own: the handler sends it when it wants the body.
  server.on('checkContinue', served)
  // The certificates a handshake trusts change as nodes are confirmed: 19 times over in each member of a 20-member
  // network's start, when nothing connects yet. A new TLS context parses the key and every certificate again
  // (OpenSSL's context alone is ~2 ms here), so it is made once a connection comes, before the TLS server (whose
  // own 'connection' listener wraps the socket with the context it holds) takes that connection.
  server.prependListener('connection', () => {
    beforeUse()
    if (!contextStale) return
    contextStale = false
    try {
      server.setSecureContext({ cert: opts.cert, key: opts.key, ca })
    } catch (err) {
      // Each certificate parsed already; should OpenSSL still refuse one, the previous context stays (thrown here,
      // in an event listener, it would end the process).
      log(`p2p: kept the previous TLS context: ${errorMessage(err)}`)
    }
  })
  server.setTimeout(opts.idleTimeoutMs ?? 60_000)
  const open = new OpenConnections({ total: limits.total, unidentifiedPerAddress: limits.unidentifiedPerAddress ?? q.unidentifiedConnectionsPerAddress }, (line, key) => refusals.refused(line, key))
  server.on('connection', (socket: Socket) => open.accepted(socket))
  server.on('secureConnection', (socket: TLSSocket) => {
    open.identified(socket)
    caps.identified(socket)
  })
  await listen(server, opts.port, opts.host)

  return {
    url: `https://${opts.host}:${opts.port}`,
    trust(peerCerts, known) {
      const usable: string[] = []
      const prints = new Set([own.fingerprint256])
      for (const pem of peerCerts) {
        if (pem === opts.cert) continue
        let fingerprint = fingerprints.get(pem) ?? known?.get(pem)
        if (fingerprint === undefined) {
          try {
            fingerprint = new X509Certificate(pem).fingerprint256
          } catch (err) {
            if (!unparsable.has(pem)) log(`p2p: left out a peer certificate that does not parse: ${errorMessage(err)}`)
            unparsable.add(pem)
            continue
          }
        }
        fingerprints.set(pem, fingerprint)
        prints.add(fingerprint)
        usable.push(pem)
      }
      registered = prints
      for (const pem of fingerprints.keys()) if (!prints.has(fingerprints.get(pem)!)) fingerprints.delete(pem)
      const next = [opts.cert, ...usable]
      if (next.length === ca.length && next.every((pem, i) => pem === ca[i])) return
      ca = next
      contextStale = true
    },
    close: () => {
      refusals.close()
      return closeServer(server)
    },
    async drain(graceMs) {
      stopping = true
      const closed = new Promise<void>((res) => server.close(() => res()))
      server.closeIdleConnections()
      if (active.size > 0) {
        await new Promise<void>((res) => {
          const timer = setTimeout(res, graceMs)
          idle = () => {
            clearTimeout(timer)
            res()
          }
        })
      }
      server.closeAllConnections()
      await closed
      refusals.close()
    },
  }
}

/**
 * Answers `status` with the JSON error body. When the request body has not been read (or, under `Expect`, not yet
 * sent), the connection is closed after the answer rather than kept: the rest of an unread body is not worth reading.
 */
export function refuse(req: IncomingMessage, res: ServerResponse, status: number, error: string): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (bodyPending(req)) headers.connection = 'close'
  res.writeHead(status, headers).end(JSON.stringify({ error }))
}

/** Whether the request announced a body that has not been read through. */
export function bodyPending(req: IncomingMessage): boolean {
  if (req.complete || req.readableEnded) return false
  if (req.headers.expect !== undefined) return true
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

function subjectLine(subject: Partial<Record<string, string | string[]>> | undefined): string {
  if (!subject) return '(no subject)'
  return Object.entries(subject)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`)
    .join(', ')
}
