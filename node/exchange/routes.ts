/**
 * The exchange's routes on the p2p endpoint (after the endpoint has matched the client certificate to a registered
 * one): a batch as JSON, a blob as a streamed body. The wire contract is written down in types.ts's header.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ParleyError, errorMessage, isParleyError } from '../core/errors.js'
import type { Hash } from '../core/ids.js'
import type { BatchPayload } from '../model/index.js'
import { bodyPending, refuse, type P2pHandler } from './p2p-server.js'
import type { InFlightTicket, PeerUsage } from './peer-usage.js'
import type { RefusalLog } from './refusal-log.js'
import type { BatchAdmission, BatchHandler, BlobHandler, BlobRef, Peer } from './types.js'

export const BATCHES_PATH = '/api/v1/batches'
export const BLOBS_PREFIX = '/api/v1/blobs/'
/** The header that announces a blob's length; the body itself is chunked, so that a longer one can be seen and cut. */
export const BLOB_SIZE_HEADER = 'parley-blob-size'

export interface RouteDeps {
  /** The trusted peer whose certificate has this fingerprint, if any. */
  peerOf(fingerprint: string): Peer | undefined
  batchHandler(): BatchHandler
  /** Asked before a batch's body is read (Exchange.onBatch). */
  batchAdmission?: BatchAdmission
  blobHandler(): BlobHandler
  parseBatch(text: string): BatchPayload
  maxBatchBytes: number
  /** What each peer org has in flight: past its share of requests or batch bytes, 429. */
  usage: PeerUsage
  /** Where refusal lines go (bounded per minute); other lines go to `log`. */
  refusals: RefusalLog
  /** How long a batch body may take to arrive, from its first byte to its last. */
  batchBodyMs: number
  log(line: string): void
}

export function exchangeRoutes(deps: RouteDeps): P2pHandler {
  return (req, res, client) => {
    const peer = deps.peerOf(client.fingerprint)
    if (!peer) {
      deps.refusals.refused(`exchange: refused ${req.method} ${req.url} from org ${client.org} (certificate sha256 ${client.fingerprint}): the certificate is not that of a trusted peer node`, client.fingerprint)
      refuse(req, res, 401, 'UNAUTHORIZED: the client certificate is not that of a trusted peer node')
      return
    }
    const path = (req.url ?? '').split('?')[0]!
    let route: (() => Promise<void>) | undefined
    if (path === BATCHES_PATH) {
      if (req.method !== 'POST') return notAllowed(req, res, 'POST')
      route = () => receiveBatch(deps, peer, ticket as InFlightTicket, req, res)
    } else if (path.startsWith(BLOBS_PREFIX)) {
      if (req.method !== 'PUT') return notAllowed(req, res, 'PUT')
      route = () => receiveBlob(deps, peer, path.slice(BLOBS_PREFIX.length), req, res)
    } else {
      refuse(req, res, 404, `NOT_FOUND: no route for ${req.method} ${path}`)
      return
    }
    const ticket = deps.usage.admit(peer.org, peer.node)
    if (typeof ticket === 'string') {
      deps.refusals.refused(`exchange: refused ${req.method} ${path} from ${peer.node} (${peer.org}): ${ticket}`)
      refuse(req, res, 429, ticket)
      return
    }
    // Given back when the route is done with what it read, not when the connection closes: a peer that hangs up after
    // its last byte would otherwise free its org's share while the handler still holds the parsed batch.
    route()
      .catch((err) => {
        // The routes answer their own failures; this is a bug in them, kept from the process.
        deps.log(`exchange: ${req.method} ${path} from ${peer.node} failed: ${errorMessage(err)}`)
        refuse(req, res, 500, `INTERNAL: ${errorMessage(err)}`)
      })
      .finally(() => ticket.release())
  }
}

function notAllowed(req: IncomingMessage, res: ServerResponse, allowed: string): void {
  res.setHeader('allow', allowed)
  refuse(req, res, 405, `METHOD_NOT_ALLOWED: ${req.method} ${req.url}; use ${allowed}`)
}

async function receiveBatch(deps: RouteDeps, peer: Peer, ticket: InFlightTicket, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const from = `${peer.node} (${peer.org})`
  const refused = (status: number, err: ParleyError | string, batch = 'a batch'): void => {
    const error = typeof err === 'string' ? err : `${err.code}: ${err.message}`
    deps.refusals.refused(`exchange: refused ${batch} from ${from}: ${error}`)
    refuse(req, res, status, error)
  }
  const type = String(req.headers['content-type'] ?? '')
  if (!/^application\/json\s*(;|$)/i.test(type)) return refused(415, `UNSUPPORTED_MEDIA_TYPE: a batch is sent as application/json, not ${type || 'without a content type'}`)
  const announced = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length'])
  if (announced !== undefined && announced > deps.maxBatchBytes) return refused(413, `PAYLOAD_TOO_LARGE: the batch is ${announced} bytes; at most ${deps.maxBatchBytes} are accepted`)
  const over = announced === undefined ? undefined : ticket.refusal(announced)
  if (over) return refused(429, over)
  try {
    deps.batchAdmission?.(peer)
  } catch (err) {
    const [status, error] = answerFor(err)
    return refused(status, error)
  }
  if (req.headers.expect !== undefined) res.writeContinue()

  let text: string
  try {
    text = await readText(req, deps.maxBatchBytes, deps.batchBodyMs, (n) => ticket.take(n))
  } catch (err) {
    if (isParleyError(err, 'PAYLOAD_TOO_LARGE')) return refused(413, err)
    if (isParleyError(err, 'TOO_MANY_REQUESTS')) return refused(429, err)
    if (isParleyError(err, 'BAD_PEER_DATA')) return refused(400, err)
    // The peer hung up or stalled: nobody hears an answer, and it sends again.
    deps.log(`exchange: a batch from ${from} did not arrive whole: ${errorMessage(err)}`)
    res.destroy()
    return
  }
  let payload: BatchPayload
  try {
    payload = deps.parseBatch(text)
  } catch (err) {
    return refused(400, isParleyError(err, 'BAD_PEER_DATA') ? err : new ParleyError('BAD_PEER_DATA', `malformed batch: ${errorMessage(err)}`))
  }
  try {
    await deps.batchHandler()(peer, payload)
  } catch (err) {
    const [status, error] = answerFor(err)
    return refused(status, error, `batch ${payload.id}`)
  }
  res.writeHead(204).end()
}

async function receiveBlob(deps: RouteDeps, peer: Peer, hashText: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const from = `${peer.node} (${peer.org})`
  const refused = (status: number, error: string, what = `blob ${hashText.slice(0, 80)}`): void => {
    deps.refusals.refused(`exchange: refused ${what} from ${from}: ${error}`)
    refuse(req, res, status, error)
  }
  if (!/^[0-9a-f]{64}$/.test(hashText)) return refused(400, 'BAD_PEER_DATA: the blob path must end in its sha256, 64 lowercase hex characters')
  const sizeText = req.headers[BLOB_SIZE_HEADER]
  const size = typeof sizeText === 'string' && /^\d{1,16}$/.test(sizeText) ? Number(sizeText) : NaN
  if (!Number.isSafeInteger(size)) return refused(400, `BAD_PEER_DATA: header ${BLOB_SIZE_HEADER} must give the blob's length in bytes`)
  const length = req.headers['content-length']
  if (length !== undefined && Number(length) !== size) return refused(400, `BAD_PEER_DATA: content-length ${length} contradicts ${BLOB_SIZE_HEADER} ${size}`)
  const blob: BlobRef = { hash: hashText as Hash, size }
  // Asked for once the handler reads it: a blob its handler refuses from the announcement (a quota) is never sent.
  const body = new VerifiedBody(req, blob, from, () => {
    if (req.headers.expect !== undefined) res.writeContinue()
  })
  let failure: unknown
  try {
    await deps.blobHandler()(peer, blob, body)
  } catch (err) {
    failure = err
  }
  // Our own verdict on the bytes wins over whatever the handler made of it.
  if (body.refusal) return refused(400, `BAD_PEER_DATA: ${body.refusal.message}`)
  if (body.cutOff) {
    deps.log(`exchange: blob ${blob.hash} from ${from} did not arrive whole: ${body.cutOff}`)
    res.destroy()
    return
  }
  if (failure !== undefined) {
    const [status, error] = answerFor(failure)
    return refused(status, error)
  }
  if (!body.verified) return refused(500, 'INTERNAL: the blob handler resolved without reading the blob through')
  res.writeHead(204).end()
}

/** The answer for a handler's rejection: 400 for bad peer data, 503 for not now, 507 and 429 for quotas, else 500. */
function answerFor(err: unknown): [number, string] {
  if (isParleyError(err, 'BAD_PEER_DATA')) return [400, `BAD_PEER_DATA: ${err.message}`]
  if (isParleyError(err, 'UNAVAILABLE')) return [503, `UNAVAILABLE: ${err.message}`]
  if (isParleyError(err, 'STORAGE_FULL')) return [507, `STORAGE_FULL: ${err.message}`]
  if (isParleyError(err, 'TOO_MANY_REQUESTS')) return [429, `TOO_MANY_REQUESTS: ${err.message}`]
  return [500, `INTERNAL: ${errorMessage(err)}`]
}

/**
 * The request body as UTF-8 text, refused past `max` bytes or when it is not UTF-8; rejects if it stalls or breaks off.
 * `take` holds each chunk's bytes as it arrives (it throws when the sender's share is spent).
 */
async function readText(req: IncomingMessage, max: number, deadlineMs: number, take: (bytes: number) => void): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  const timer = setTimeout(() => req.destroy(new Error(`the body took longer than ${deadlineMs} ms`)), deadlineMs)
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > max) throw new ParleyError('PAYLOAD_TOO_LARGE', `the batch is over ${max} bytes, the most accepted`)
      take(chunk.length)
      chunks.push(chunk)
    }
  } finally {
    clearTimeout(timer)
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size))
  } catch {
    throw new ParleyError('BAD_PEER_DATA', 'malformed batch: the body is not UTF-8')
  }
}

/**
 * A blob's body for its handler: read once, counted and hashed on the way. Past the announced size it throws at once
 * (nothing more is read); at its end, a length or hash other than announced throws. Either is BAD_PEER_DATA, kept in
 * `refusal`. A connection that breaks first throws UNAVAILABLE, kept in `cutOff`.
 */
class VerifiedBody implements AsyncIterable<Uint8Array> {
  refusal: ParleyError | undefined
  cutOff: string | undefined
  verified = false
  private started = false

  constructor(
    private readonly req: IncomingMessage,
    private readonly blob: BlobRef,
    private readonly from: string,
    private readonly reading: () => void,
  ) {}

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.started) throw new ParleyError('INTERNAL', 'a received blob can be read only once')
    this.started = true
    this.reading()
    const { size, hash } = this.blob
    const sha = createHash('sha256')
    let count = 0
    const chunks = this.req.iterator({ destroyOnReturn: false }) as AsyncIterableIterator<Buffer>
    try {
      for (;;) {
        let next: IteratorResult<Buffer>
        try {
          next = await chunks.next()
        } catch (err) {
          this.cutOff = `the connection broke after ${count} of ${size} bytes: ${errorMessage(err)}`
          throw new ParleyError('UNAVAILABLE', `blob ${hash} from ${this.from}: ${this.cutOff}`)
        }
        if (next.done) break
        count += next.value.length
        if (count > size) throw this.refuse(`blob ${hash} is longer than the announced ${size} bytes; cut off at ${count}`)
        sha.update(next.value)
        yield next.value
      }
    } finally {
      // Stopped early (refused, or the handler stopped reading): the rest stays unread, the connection closes after
      // the answer. `destroyOnReturn: false` keeps the socket for that answer.
      await chunks.return?.()
    }
    if (count !== size) throw this.refuse(`blob ${hash} ended after ${count} bytes; ${size} were announced`)
    const actual = sha.digest('hex')
    if (actual !== hash) throw this.refuse(`blob announced as ${hash} hashes to ${actual}`)
    this.verified = true
  }

  private refuse(message: string): ParleyError {
    this.refusal = new ParleyError('BAD_PEER_DATA', message)
    return this.refusal
  }
}
