import https from 'node:https'
import { createNodeCertificate, type TlsMaterial } from '../../network/tls.js'
import { freePort } from '../../network/process.js'
import { parseBatch, serializeBatch } from '../../node/batch/payload.js'
import { sealManifest } from '../../node/batch/verify.js'
import { dataHash, dataRefsHash, messageHash } from '../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { createExchange } from '../../node/exchange/index.js'
import type { BatchAdmission, BatchHandler, BlobHandler, Exchange, ExchangeOptions, Peer } from '../../node/exchange/types.js'
import type { BatchPayload, Header } from '../../node/model/index.js'

/** Retries short enough for tests: 4 attempts, waits 50, 100, 200 ms. */
export const FAST_RETRY = { attempts: 4, firstWaitMs: 50, maxWaitMs: 200 }

export interface TestNode {
  name: string
  org: string
  tls: TlsMaterial
  peer: Peer
  exchange: Exchange
  logs: string[]
  batches: Array<{ from: Peer; payload: BatchPayload }>
  /** Replaceable: what the node does with a batch (default: records it and resolves). */
  batchHandler: BatchHandler
  /** Replaceable: asked before a batch's body is read (default: admits every batch). */
  batchAdmission: BatchAdmission
  blobHandler: BlobHandler
  port: number
}

/** A node with its own certificate and port, its exchange created (not started), handlers that delegate to fields. */
export async function makeNode(org: string, opts: Partial<ExchangeOptions> = {}, tls?: TlsMaterial): Promise<TestNode> {
  const name = `node-${org}`
  tls ??= await createNodeCertificate(org, name)
  const port = opts.port ?? (await freePort())
  const logs: string[] = []
  const node = {
    name,
    org,
    tls,
    port,
    logs,
    batches: [],
    peer: { node: `did:firefly:node/${name}`, org, endpoint: `https://127.0.0.1:${port}`, cert: tls.cert },
  } as unknown as TestNode
  node.batchHandler = async (from, payload) => void node.batches.push({ from, payload })
  node.batchAdmission = () => {}
  node.blobHandler = async (_from, _blob, content) => {
    for await (const chunk of content) void chunk
  }
  node.exchange = createExchange({
    host: '127.0.0.1',
    port,
    cert: tls.cert,
    key: tls.key,
    log: (line) => logs.push(line),
    codec: { parse: parseBatch, serialize: serializeBatch },
    retry: FAST_RETRY,
    ...opts,
  })
  node.exchange.onBatch((from, payload) => node.batchHandler(from, payload), (from) => node.batchAdmission(from))
  node.exchange.onBlob((from, blob, content) => node.blobHandler(from, blob, content))
  return node
}

/** Starts each node trusting all the others. */
export async function startAll(nodes: TestNode[]): Promise<void> {
  for (const n of nodes) {
    n.exchange.trust(nodes.filter((o) => o !== n).map((o) => o.peer))
    await n.exchange.start()
  }
}

/**
 * A valid private batch authored by `org`, with `count` messages of one small data value each; `text` goes into every
 * value, `unpinned` makes it a batch of unpinned (`txtype: none`) messages.
 */
export function makeBatch(org: string, count = 2, opts: { text?: string; unpinned?: boolean } = {}): BatchPayload {
  const author = `did:firefly:org/${org}`
  const key = '0x' + 'ab'.repeat(20)
  const group = 'c'.repeat(64) as Hash
  const data = Array.from({ length: count }, (_, i) => {
    const valueRaw = JSON.stringify({ n: i, text: opts.text ?? `value ${i}` })
    return { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw }), created: now(), value: valueRaw }
  })
  const txtype = opts.unpinned ? 'none' : 'batch_pin'
  const messages = data.map((d) => {
    const header: Header = { id: newId<MessageId>(), type: 'private', txtype, author, key, created: now(), namespace: 'default', group, topics: ['t1'], datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
    return { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }] }
  })
  const tx = { type: opts.unpinned ? ('unpinned' as const) : ('batch_pin' as const), id: newId<TxId>() }
  const b = { id: newId<BatchId>(), type: 'private' as const, namespace: 'default', author, key, group, created: now(), hash: '' as Hash, tx, messages, data }
  return { ...b, hash: sealManifest(b).hash }
}

/**
 * The same messages (ids and hashes) again in another batch of their author, carrying their data items with another
 * validator, which neither a data hash nor a message hash covers.
 */
export function carriedAgain(b: BatchPayload): BatchPayload {
  const again = { ...b, id: newId<BatchId>(), tx: { type: 'batch_pin' as const, id: newId<TxId>() }, data: b.data.map((d) => ({ ...d, validator: 'none' })) }
  return { ...again, hash: sealManifest(again).hash }
}

export interface RawAnswer {
  status: number
  body: string
  headers: Record<string, string | string[] | undefined>
}

/**
 * A request written by hand (a peer that does not follow the protocol): `client` as the client certificate, any
 * server certificate accepted. Resolves with the answer, or rejects when the connection fails first.
 */
export function rawRequest(
  url: string,
  client: TlsMaterial | undefined,
  init: { method: string; headers?: Record<string, string>; body?: Buffer | string | AsyncIterable<Uint8Array> },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method: init.method,
      headers: init.headers,
      rejectUnauthorized: false,
      agent: false,
      ...(client ? { cert: client.cert, key: client.key } : {}),
    })
    req.on('error', reject)
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }))
      res.on('error', reject)
    })
    const b = init.body
    if (b === undefined || typeof b === 'string' || Buffer.isBuffer(b)) req.end(b)
    else
      void (async () => {
        try {
          for await (const chunk of b) if (!req.write(chunk)) await new Promise((r) => req.once('drain', r))
          req.end()
        } catch (err) {
          req.destroy(err as Error)
        }
      })()
  })
}

/** What a promise settles to, as a value: `{ ok: value }` or `{ err }`. */
export async function settle<T>(p: Promise<T>): Promise<{ ok: T; err?: undefined } | { ok?: undefined; err: unknown }> {
  try {
    return { ok: await p }
  } catch (err) {
    return { err }
  }
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}
