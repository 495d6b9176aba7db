import https from 'node:https'
import { X509Certificate } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { closeServer, listen } from '../core/listen.js'

export interface P2pServer {
  url: string
  /** Replaces the set of peer certificates whose holders may connect (self-signed: each is its own CA). */
  trust(peerCerts: string[]): void
  close(): Promise<void>
}

export type P2pHandler = (req: IncomingMessage, res: ServerResponse, peer: { org: string; cert: string }) => void

export interface P2pServerOptions {
  host: string
  port: number
  cert: string
  key: string
  handler?: P2pHandler
}

/**
 * The member's peer-to-peer endpoint: HTTPS with mutual TLS. A client must present a certificate that one of the
 * registered member nodes published; the sending org is read from that certificate, never from the request body.
 */
export async function startP2pServer(opts: P2pServerOptions): Promise<P2pServer> {
  let ca = [opts.cert]
  // TLS checks that a client certificate chains to a trusted one; a trusted member's certificate could sign another
  // that names any org. Only a certificate some node registered, byte for byte, identifies a sender.
  let registered = new Set([fingerprint(opts.cert)])
  const server = https.createServer({ cert: opts.cert, key: opts.key, ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const peerCert = (req.socket as TLSSocket).getPeerCertificate(false)
    if (!registered.has(peerCert.fingerprint256)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'UNAUTHORIZED: the client certificate is not one a registered node published' }))
      return
    }
    const org = typeof peerCert.subject?.O === 'string' ? peerCert.subject.O : undefined
    if (!org) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'UNAUTHORIZED: client certificate names no organization' }))
      return
    }
    if (req.url === '/api/v1/ping' && (req.method === 'HEAD' || req.method === 'GET')) {
      res.writeHead(204).end()
      return
    }
    if (opts.handler) {
      opts.handler(req, res, { org, cert: peerCert.raw.toString('base64') })
      return
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `NOT_FOUND: no route for ${req.method} ${req.url}` }))
  })
  server.headersTimeout = 30_000
  await listen(server, opts.port, opts.host)
  return {
    url: `https://${opts.host}:${opts.port}`,
    trust(peerCerts) {
      ca = [opts.cert, ...peerCerts.filter((c) => c !== opts.cert)]
      registered = new Set(ca.map(fingerprint))
      server.setSecureContext({ cert: opts.cert, key: opts.key, ca })
    },
    close: () => closeServer(server),
  }
}

/** The SHA-256 fingerprint of a PEM certificate, in the form TLS sockets report a peer's (`AB:CD:...`). */
function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256
}
