/**
 * A hostile member's deliveries over the private exchange: mutual TLS with its own node's certificate (so the peer
 * takes it for that node, as it is), one attempt each, and the peer's answer reported rather than retried.
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { parseBatch, serializeBatch } from '../../node/batch/payload.js'
import { errorMessage } from '../../node/core/errors.js'
import type { Hash } from '../../node/core/ids.js'
import { createExchange, type BatchPayload, type Exchange, type Peer } from '../../node/exchange/index.js'
import { nodeDid } from '../../node/model/index.js'
import type { MemberDescription } from '../description.js'
import type { Layout } from '../layout.js'

/** What a peer made of one delivery: stored (its 204), or refused with its answer. */
export type DeliveryOutcome = { to: string; stored: true } | { to: string; stored: false; refusal: string }

export class RogueExchange {
  private readonly exchange: Exchange

  constructor(
    private readonly L: Layout,
    readonly from: MemberDescription,
  ) {
    const M = L.member(from.org)
    this.exchange = createExchange({
      // Never started: it only sends.
      host: '127.0.0.1',
      port: 0,
      cert: readFileSync(M.cert, 'utf8'),
      key: readFileSync(M.key, 'utf8'),
      log: () => {},
      codec: { serialize: serializeBatch, parse: parseBatch },
      retry: { attempts: 1 },
      idleTimeoutMs: 30_000,
    })
  }

  /** The peer as the exchange pins it: its node DID, endpoint and registered certificate (from its folder). */
  peer(m: MemberDescription): Peer {
    return { node: nodeDid(m.node), org: m.org, endpoint: m.p2p, cert: readFileSync(this.L.member(m.org).cert, 'utf8') }
  }

  async deliver(to: MemberDescription, payload: BatchPayload): Promise<DeliveryOutcome> {
    try {
      await this.exchange.sendBatch(this.peer(to), payload)
      return { to: to.org, stored: true }
    } catch (err) {
      return { to: to.org, stored: false, refusal: errorMessage(err) }
    }
  }

  /** PUTs `size` bytes nobody refers to, of content no other blob has; answers its hash and what the peer said. */
  async putBlob(to: MemberDescription, size: number): Promise<{ hash: Hash; outcome: DeliveryOutcome }> {
    const content = uniqueContent(size)
    const hash = await hashOf(content)
    try {
      await this.exchange.sendBlob(this.peer(to), { hash, size }, content)
      return { hash, outcome: { to: to.org, stored: true } }
    } catch (err) {
      return { hash, outcome: { to: to.org, stored: false, refusal: errorMessage(err) } }
    }
  }

  stop(): Promise<void> {
    return this.exchange.stop()
  }
}

const CHUNK = 64 * 1024

/**
 * `size` bytes, the same at each iteration (hashed first, then sent): a random chunk drawn for this blob alone,
 * repeated, so that no two blobs are the same and none is held whole in memory.
 */
export function uniqueContent(size: number): AsyncIterable<Uint8Array> {
  const block = randomBytes(CHUNK)
  return {
    async *[Symbol.asyncIterator]() {
      for (let at = 0; at < size; at += CHUNK) yield block.subarray(0, Math.min(CHUNK, size - at))
    },
  }
}

export async function hashOf(content: AsyncIterable<Uint8Array>): Promise<Hash> {
  const h = createHash('sha256')
  for await (const chunk of content) h.update(chunk)
  return h.digest('hex') as Hash
}
