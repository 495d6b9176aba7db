/** The exchange over HTTPS with mutual TLS: see types.ts for the contract and the wire. */
import https from 'node:https'
import { X509Certificate } from 'node:crypto'
import { ParleyError } from '../core/errors.js'
import { MAX_BATCH_PAYLOAD_BYTES, type BatchPayload } from '../model/index.js'
import { attempt, ContentFailure, type Target } from './client.js'
import { connectionLimits, startP2pServer, type P2pServer } from './p2p-server.js'
import { DEFAULT_RETRY, withRetries } from './retry.js'
import { PeerUsage } from './peer-usage.js'
import { RefusalLog } from './refusal-log.js'
import { BATCHES_PATH, BLOB_SIZE_HEADER, BLOBS_PREFIX, exchangeRoutes } from './routes.js'
import {
  DEFAULT_EXCHANGE_QUOTAS,
  DEFAULT_IDLE_TIMEOUT_MS,
  MAX_SOCKETS_PER_PEER,
  BATCH_TIME_LIMIT_MS,
  type BatchAdmission,
  type BatchHandler,
  type BlobHandler,
  type BlobRef,
  type Exchange,
  type ExchangeOptions,
  type Peer,
  type RetryPolicy,
} from './types.js'

export function createExchange(opts: ExchangeOptions): Exchange {
  return new HttpsExchange(opts)
}

class HttpsExchange implements Exchange {
  private batchHandler: BatchHandler | undefined
  private batchAdmission: BatchAdmission | undefined
  private blobHandler: BlobHandler | undefined
  private server: P2pServer | undefined
  private started = false
  private stopped: Promise<void> | undefined
  /** Trusted peers by the fingerprint of their certificate. */
  private peers = new Map<string, Peer>()
  private readonly badCerts = new Set<string>()
  private readonly fingerprints = new Map<string, string>()
  private readonly stopping = new AbortController()
  private readonly inFlight = new Set<Promise<void>>()
  private readonly retry: RetryPolicy
  private readonly idleMs: number
  // Separate pools, so that a batch never waits for a socket behind long blob uploads. Connections are kept alive
  // (pooled by endpoint and pinned certificate), but TLS sessions are not resumed: Node skips checkServerIdentity on
  // a resumed session, and the pin should not rest on how a session came to be cached.
  private readonly batchAgent = new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_PEER, maxCachedSessions: 0 })
  private readonly blobAgent = new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_PEER, maxCachedSessions: 0 })

  constructor(private readonly opts: ExchangeOptions) {
    this.retry = { ...DEFAULT_RETRY, ...opts.retry }
    this.idleMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  }

  onBatch(handler: BatchHandler, admit?: BatchAdmission): void {
    if (this.started) throw new ParleyError('INTERNAL', 'the exchange takes its batch handler before it starts')
    this.batchHandler = handler
    this.batchAdmission = admit
  }

  onBlob(handler: BlobHandler): void {
    if (this.started) throw new ParleyError('INTERNAL', 'the exchange takes its blob handler before it starts')
    this.blobHandler = handler
  }

  async start(): Promise<void> {
    if (this.started) throw new ParleyError('INTERNAL', 'the exchange is already started')
    if (this.stopped) throw new ParleyError('UNAVAILABLE', 'the exchange is stopped')
    if (!this.batchHandler || !this.blobHandler) throw new ParleyError('INTERNAL', `the exchange starts only once it has its ${this.batchHandler ? 'blob' : 'batch'} handler`)
    this.started = true
    const { batchHandler, blobHandler, batchAdmission } = this
    const q = { ...DEFAULT_EXCHANGE_QUOTAS, ...this.opts.quotas }
    // One bound on refusal lines for the endpoint and the routes: a flood of either is one count a minute.
    const refusals = new RefusalLog({ perMinute: q.refusalLinesPerMinute, log: this.opts.log })
    try {
      this.server = await startP2pServer({
        host: this.opts.host,
        port: this.opts.port,
        cert: this.opts.cert,
        key: this.opts.key,
        unknownCertificates: 'http',
        log: this.opts.log,
        refusals,
        connections: connectionLimits(q),
        orgOf: (fingerprint) => this.peers.get(fingerprint)?.org,
        idleTimeoutMs: this.idleMs,
        ...(this.opts.beforeUse ? { beforeUse: this.opts.beforeUse } : {}),
        handler: exchangeRoutes({
          peerOf: (fingerprint) => this.peers.get(fingerprint),
          batchHandler: () => batchHandler,
          ...(batchAdmission ? { batchAdmission } : {}),
          blobHandler: () => blobHandler,
          parseBatch: (text) => this.opts.codec.parse(text),
          maxBatchBytes: this.opts.maxBatchBytes ?? MAX_BATCH_PAYLOAD_BYTES,
          usage: new PeerUsage({ requestsPerOrg: q.inFlightRequestsPerOrg, batchBytesPerOrg: q.inFlightBatchBytesPerOrg }),
          refusals,
          batchBodyMs: BATCH_TIME_LIMIT_MS,
          log: this.opts.log,
        }),
      })
    } catch (err) {
      this.started = false
      throw err
    }
    this.server.trust([...this.peers.values()].map((p) => p.cert))
  }

  trust(peers: readonly Peer[]): void {
    const next = new Map<string, Peer>()
    for (const peer of peers) {
      const fingerprint = this.fingerprintOf(peer.cert)
      if (!fingerprint) {
        if (!this.badCerts.has(peer.cert)) this.opts.log(`exchange: left out peer ${peer.node} (${peer.org}): its certificate does not parse`)
        this.badCerts.add(peer.cert)
        continue
      }
      const held = next.get(fingerprint)
      if (held && held.node !== peer.node) this.opts.log(`exchange: peers ${held.node} and ${peer.node} registered the same certificate; it identifies ${held.node}`)
      if (!held) next.set(fingerprint, peer)
    }
    this.peers = next
    // Only what the current peers need stays cached.
    for (const pem of this.fingerprints.keys()) if (!peers.some((p) => p.cert === pem)) this.fingerprints.delete(pem)
    this.server?.trust([...next.values()].map((p) => p.cert), this.fingerprints)
  }

  sendBatch(to: Peer, payload: BatchPayload): Promise<void> {
    return this.track(async () => {
      const target = this.target(to)
      const bytes = Buffer.from(this.opts.codec.serialize(payload), 'utf8')
      await withRetries(`batch ${payload.id} to ${target.label}`, this.retry, this.stopping.signal, this.opts.log, () =>
        attempt({
          target,
          own: this.opts,
          agent: this.batchAgent,
          method: 'POST',
          path: BATCHES_PATH,
          headers: { 'content-type': 'application/json' },
          // Under Expect a large batch is not sent to a peer that refuses it (401, 413, 429) from its headers.
          body: { bytes, expectContinue: bytes.length > 64 * 1024 },
          idleMs: this.idleMs,
          deadlineMs: BATCH_TIME_LIMIT_MS,
        }),
      )
    })
  }

  sendBlob(to: Peer, blob: BlobRef, content: AsyncIterable<Uint8Array>): Promise<void> {
    return this.track(async () => {
      const target = this.target(to)
      if (!/^[0-9a-f]{64}$/.test(blob.hash)) throw new ParleyError('BAD_REQUEST', `blob hash ${blob.hash} is not a sha256 in lowercase hex`)
      if (!Number.isSafeInteger(blob.size) || blob.size < 0) throw new ParleyError('BAD_REQUEST', `blob size ${blob.size} is not a byte count`)
      try {
        await withRetries(`blob ${blob.hash} to ${target.label}`, this.retry, this.stopping.signal, this.opts.log, () =>
          attempt({
            target,
            own: this.opts,
            agent: this.blobAgent,
            method: 'PUT',
            path: `${BLOBS_PREFIX}${blob.hash}`,
            headers: { 'content-type': 'application/octet-stream', [BLOB_SIZE_HEADER]: String(blob.size) },
            body: { stream: content, size: blob.size },
            idleMs: this.idleMs,
          }),
        )
      } catch (err) {
        if (err instanceof ContentFailure) throw err.error
        throw err
      }
    })
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping.abort()
      await Promise.all([Promise.allSettled([...this.inFlight]), this.server?.drain(this.idleMs)])
      this.batchAgent.destroy()
      this.blobAgent.destroy()
    })()
    return this.stopped
  }

  /** Runs a send unless stopping, and lets `stop` wait for it. */
  private track(send: () => Promise<void>): Promise<void> {
    if (this.stopped) return Promise.reject(new ParleyError('UNAVAILABLE', 'the exchange is stopped'))
    const p = send()
    this.inFlight.add(p)
    const forget = (): void => void this.inFlight.delete(p)
    p.then(forget, forget)
    return p
  }

  private target(to: Peer): Target {
    let base: URL
    try {
      base = new URL(to.endpoint)
    } catch {
      throw new ParleyError('BAD_REQUEST', `peer ${to.node} has endpoint ${JSON.stringify(to.endpoint)}, not a URL`)
    }
    if (base.protocol !== 'https:') throw new ParleyError('BAD_REQUEST', `peer ${to.node} has endpoint ${to.endpoint}, not an https URL`)
    const fingerprint = this.fingerprintOf(to.cert)
    if (!fingerprint) throw new ParleyError('BAD_REQUEST', `peer ${to.node} has a certificate that does not parse`)
    return { label: `${to.node} at ${to.endpoint}`, base, cert: to.cert, fingerprint }
  }

  private fingerprintOf(pem: string): string | undefined {
    let fingerprint = this.fingerprints.get(pem)
    if (fingerprint) return fingerprint
    try {
      fingerprint = new X509Certificate(pem).fingerprint256
    } catch {
      return undefined
    }
    if (this.fingerprints.size > 1000) this.fingerprints.clear()
    this.fingerprints.set(pem, fingerprint)
    return fingerprint
  }
}
