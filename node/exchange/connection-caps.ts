import type { Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { addCount } from '../core/counts.js'

export interface ConnectionLimits {
  /** Open connections from one client certificate (`quotas.connectionsPerCertificate`). */
  perCertificate: number
  /** Open connections from the registered nodes of one org together (`quotas.connectionsPerOrg`). */
  perOrg: number
  /** Open connections from certificates no node registered, together (`quotas.unregisteredConnections`). */
  unregistered: number
}

export interface ConnectionCapsDeps {
  /** Whether a node registered the certificate with this fingerprint. */
  registered(fingerprint: string): boolean
  /** The org of the registered node whose certificate this is, when known beyond the certificate's own subject. */
  orgOf?(fingerprint: string): string | undefined
}

/** How long a connection over a cap is kept for its first request to be answered, before it is dropped. */
export const CAPPED_GRACE_MS = 5_000

/**
 * How many p2p connections each peer holds open, counted once the TLS handshake says who it is. A connection over
 * one of its caps is not dropped at once: its requests are answered 429 naming the quota (so the sender knows, and
 * retries later), and it is closed after the first answer or after `CAPPED_GRACE_MS`. It counts against no cap, only
 * against the server's total (OpenConnections), which bounds everything, handshakes included. Certificates
 * nobody registered share one cap of their own, so that strangers with fresh certificates cannot crowd out members.
 */
export class ConnectionCaps {
  private readonly open = new Map<string, number>()
  private readonly refusals = new WeakMap<Socket, string>()

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly deps: ConnectionCapsDeps,
  ) {}

  /** A connection whose handshake completed: counted until it closes, or marked as over a cap. */
  identified(socket: TLSSocket): void {
    const cert = socket.getPeerCertificate(false)
    const fingerprint = cert?.fingerprint256
    const subjectOrg = typeof cert?.subject?.O === 'string' ? cert.subject.O : undefined
    const counters: Array<{ key: string; max: number; refusal: () => string }> = []
    if (fingerprint && this.deps.registered(fingerprint)) {
      const org = this.deps.orgOf?.(fingerprint) ?? subjectOrg ?? '(no organization)'
      counters.push({ key: `cert ${fingerprint}`, max: this.limits.perCertificate, refusal: () => `certificate sha256 ${fingerprint} already has ${this.limits.perCertificate} connections open here (quotas.connectionsPerCertificate)` })
      counters.push({ key: `org ${org}`, max: this.limits.perOrg, refusal: () => `org ${org} already has ${this.limits.perOrg} connections open here over all its nodes (quotas.connectionsPerOrg)` })
    } else {
      counters.push({ key: 'unregistered', max: this.limits.unregistered, refusal: () => `${this.limits.unregistered} connections from certificates no node registered are open here already (quotas.unregisteredConnections)` })
    }
    const over = counters.find((c) => (this.open.get(c.key) ?? 0) >= c.max)
    if (over) {
      this.refusals.set(socket, `TOO_MANY_REQUESTS: ${over.refusal()}`)
      const timer = setTimeout(() => socket.destroy(), CAPPED_GRACE_MS)
      timer.unref()
      socket.once('close', () => clearTimeout(timer))
      return
    }
    for (const c of counters) addCount(this.open, c.key, 1)
    socket.once('close', () => {
      for (const c of counters) addCount(this.open, c.key, -1)
    })
  }

  /** The 429's text for a request on a connection over a cap; undefined for one within its caps. */
  refusalOf(socket: Socket): string | undefined {
    return this.refusals.get(socket)
  }

  /** Open connections counted under a key (`cert <fingerprint>`, `org <org>`, `unregistered`), for tests. */
  count(key: string): number {
    return this.open.get(key) ?? 0
  }
}
