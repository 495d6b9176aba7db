import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Interface, type InterfaceAbi } from 'ethers'
import { BATCH_PIN_ARTIFACT } from '../../network/chain/deploy.js'
import type { NetworkDescription } from '../../network/description.js'

/**
 * What the chain itself says was pinned, and in which order, for tests to hold the members to. Read over the chain's
 * JSON-RPC and decoded with ethers from the compiled contract's ABI, and the batches read from IPFS by the CIDs the
 * pins name: none of it goes through a member or the node's own decoder (node/chain/abi.ts), so a mistake every
 * member shares cannot make the expected order agree with them.
 */

const batchPin = new Interface((JSON.parse(readFileSync(BATCH_PIN_ARTIFACT, 'utf8')) as { abi: InterfaceAbi }).abi)
const BATCH_PIN = batchPin.getEvent('BatchPin')!

export interface ChainPin {
  block: number
  txIndex: number
  logIndex: number
  author: string
  action: string
  txId: string
  batchId: string
  /** 0x-prefixed, as on chain. */
  batchHash: string
  /** The broadcast batch's CID; empty for a private batch. */
  payloadRef: string
  /** 0x-prefixed, as on chain. */
  contexts: string[]
}

/** A broadcast batch as its sender stored it on IPFS: the parts the order and the checks here read. */
export interface IpfsBatch {
  id: string
  namespace: string
  author: string
  hash: string
  payload: {
    tx: { type: string; id: string }
    messages: { header: { id: string; topics: string[] }; hash: string }[]
    data: { id: string; hash: string }[]
  }
}

interface RpcLog {
  topics: string[]
  data: string
  blockNumber: string
  transactionIndex: string
  logIndex: string
  removed?: boolean
}

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const body = (await res.json()) as { result?: T; error?: { message: string } }
  if (body.error || body.result === undefined) throw new Error(`${method} on ${url}: ${body.error?.message ?? `HTTP ${res.status}`}`)
  return body.result
}

const uuid = (hex: string): string => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`

/** Every BatchPin log of the network's contract, in chain order (block, transaction, log). */
export async function chainPins(chain: NetworkDescription['chain']): Promise<ChainPin[]> {
  const logs = await rpc<RpcLog[]>(chain.rpc, 'eth_getLogs', [
    { address: chain.contract, topics: [BATCH_PIN.topicHash], fromBlock: `0x${chain.firstBlock.toString(16)}`, toBlock: 'latest' },
  ])
  const pins = logs
    .filter((l) => l.removed !== true)
    .map((l): ChainPin => {
      const e = batchPin.parseLog({ topics: l.topics, data: l.data })!
      const uuids = (e.args.uuids as string).slice(2)
      return {
        block: Number(l.blockNumber),
        txIndex: Number(l.transactionIndex),
        logIndex: Number(l.logIndex),
        author: (e.args.author as string).toLowerCase(),
        action: e.args.action as string,
        txId: uuid(uuids.slice(0, 32)),
        batchId: uuid(uuids.slice(32)),
        batchHash: e.args.batchHash as string,
        payloadRef: e.args.payloadRef as string,
        contexts: [...(e.args.contexts as string[])],
      }
    })
  return pins.sort((a, b) => a.block - b.block || a.txIndex - b.txIndex || a.logIndex - b.logIndex)
}

/**
 * The broadcast batch a pin names, from the IPFS gateway, checked against the pin: the batch id the pin packs, and
 * the hash it pins recomputed from the payload's own manifest (so the payload's message order is the one the chain
 * ordered).
 */
export async function pinnedBatch(d: NetworkDescription, pin: ChainPin): Promise<IpfsBatch> {
  const res = await fetch(`${d.ipfs.gateway}/ipfs/${pin.payloadRef}`)
  if (res.status !== 200) throw new Error(`IPFS has no ${pin.payloadRef} (pinned for batch ${pin.batchId}): ${res.status}`)
  const batch = (await res.json()) as IpfsBatch
  if (batch.id !== pin.batchId) throw new Error(`${pin.payloadRef} holds batch ${batch.id}, pinned as ${pin.batchId}`)
  const manifest = JSON.stringify({
    version: 1,
    id: batch.id,
    tx: { type: batch.payload.tx.type, id: batch.payload.tx.id },
    messages: batch.payload.messages.map((m) => ({ id: m.header.id, hash: m.hash, topics: m.header.topics.length })),
    data: batch.payload.data.map((x) => ({ id: x.id, hash: x.hash })),
  })
  const hash = '0x' + createHash('sha256').update(manifest).digest('hex')
  if (hash !== pin.batchHash) throw new Error(`batch ${batch.id} on IPFS hashes to ${hash}; its pin says ${pin.batchHash}`)
  return batch
}

/**
 * The on-chain order of `ids` (message id → topic), per topic: broadcast pins in chain order, each batch once (its
 * first pin orders it), the messages of each in its payload's order. Also answers the pins and batches holding them.
 */
export async function chainOrder(
  d: NetworkDescription,
  topicOf: Map<string, string>,
): Promise<{ order: Map<string, string[]>; batches: { pin: ChainPin; batch: IpfsBatch }[] }> {
  const order = new Map<string, string[]>()
  const batches: { pin: ChainPin; batch: IpfsBatch }[] = []
  const seenBatch = new Set<string>()
  const seenMsg = new Set<string>()
  for (const pin of await chainPins(d.chain)) {
    if (pin.payloadRef === '' || seenBatch.has(pin.batchId)) continue
    seenBatch.add(pin.batchId)
    const batch = await pinnedBatch(d, pin)
    let ours = false
    for (const m of batch.payload.messages) {
      const t = topicOf.get(m.header.id)
      if (t === undefined) continue
      if (seenMsg.has(m.header.id)) throw new Error(`message ${m.header.id} is in two pinned batches`)
      seenMsg.add(m.header.id)
      ours = true
      order.set(t, [...(order.get(t) ?? []), m.header.id])
    }
    if (ours) batches.push({ pin, batch })
  }
  return { order, batches }
}
