import { Wallet } from 'ethers'
import { create } from 'kubo-rpc-client'
import type { NetworkDescription } from '../../network/description.js'
import { fundAccounts } from '../../network/chain/deploy.js'
import { rpcCall } from '../../network/probe.js'
import { broadcastBatch, broadcastContexts, orgClaimBatch, type BroadcastItem } from '../../network/rogue/batches.js'
import { createChain } from '../../node/chain/index.js'
import type { Chain } from '../../node/chain/types.js'
import { createIpfsStorage } from '../../node/storage/ipfs.js'
import { serializeBatch } from '../../node/batch/payload.js'
import type { BatchId, Hash } from '../../node/core/ids.js'
import type { BatchPayload } from '../../node/model/index.js'

export type RogueItem = BroadcastItem

export interface Published {
  batchId: BatchId
  payloadRef: string
  txHash: string
  pinnedHash: Hash
}

/**
 * A test-only member of nobody: its own funded key (never a running node's, so no nonce clashes), which builds
 * broadcast batches with the node's own formulas, writes them to IPFS and pins them on the BatchPin contract.
 * Tests tamper with a built batch before publishing it.
 */
export class RogueSender {
  readonly wallet = Wallet.createRandom()
  readonly key = this.wallet.address.toLowerCase()
  private chain: Chain | undefined
  private readonly storage

  constructor(private readonly net: NetworkDescription, readonly author: string) {
    this.storage = createIpfsStorage({ api: net.ipfs.api, gateway: net.ipfs.gateway, log: () => {} })
  }

  async start(): Promise<void> {
    await fundAccounts(this.net.chain.rpc, [this.wallet.address], '10')
    const head = Number(await rpcCall<string>(this.net.chain.rpc, 'eth_blockNumber', []))
    this.chain = createChain({
      rpc: this.net.chain.rpc,
      contract: this.net.chain.contract,
      privateKey: this.wallet.privateKey,
      fromBlock: head + 1,
      log: () => {},
      onEvents: async () => {},
    })
    this.chain.start()
  }

  async stop(): Promise<void> {
    await this.chain?.stop()
    await this.storage.stop()
  }

  /** A well-formed, self-consistent broadcast batch: one message per item, each with one JSON value (and optionally a blob). */
  build(namespace: string, items: RogueItem[]): BatchPayload {
    return broadcastBatch({ did: this.author, key: this.key }, namespace, items)
  }

  /**
   * Uploads the batch (or `text` instead of its serialization) and pins it with contexts sha256(topic) per
   * message topic. `pinnedHash` overrides the batch hash written on chain.
   */
  async publish(b: BatchPayload, opts: { pinnedHash?: Hash; text?: string } = {}): Promise<Published> {
    if (!this.chain) throw new Error('start() the rogue sender first')
    const payloadRef = await this.storage.upload(new TextEncoder().encode(opts.text ?? serializeBatch(b)), 'batch.json')
    const pinnedHash = opts.pinnedHash ?? b.hash
    const { txHash } = await this.chain.submitPinBatch({ txId: b.tx.id, batchId: b.id, batchHash: pinnedHash, payloadRef, contexts: broadcastContexts(b) })
    return { batchId: b.id, payloadRef, txHash, pinnedHash }
  }

  /**
   * Registers the rogue's author as an org of the network, through the chain like any member (an org claim signed
   * with its own key), so that what it sends later is judged on its content, not refused for its author.
   */
  async registerOrg(): Promise<Published> {
    const name = /^did:firefly:org\/(.+)$/.exec(this.author)?.[1]
    if (!name) throw new Error(`author ${this.author} is not an org DID`)
    return this.publish(orgClaimBatch(name, this.key))
  }

  /** The reference shared storage would give these bytes, without storing them (`add --only-hash`). */
  async referenceOf(bytes: Uint8Array): Promise<string> {
    const client = create({ url: `${this.net.ipfs.api}/api/v0` })
    const res = await client.add(bytes, { cidVersion: 0, rawLeaves: false, onlyHash: true, pin: false })
    return res.cid.toString()
  }

  /** Publishes raw bytes to shared storage (a blob a batch will announce), answering the reference. */
  async upload(bytes: Uint8Array): Promise<string> {
    return this.storage.upload(bytes, 'blob.bin')
  }
}
