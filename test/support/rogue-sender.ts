import { Wallet } from 'ethers'
import type { NetworkDescription } from '../../network/description.js'
import { fundAccounts } from '../../network/chain/deploy.js'
import { rpcCall } from '../../network/probe.js'
import { createChain } from '../../node/chain/index.js'
import type { Chain } from '../../node/chain/types.js'
import { createIpfsStorage } from '../../node/storage/ipfs.js'
import { serializeBatch, type BatchPayload } from '../../node/batch/payload.js'
import { sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../node/core/hashes.js'
import { compactJson } from '../../node/core/json.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import type { Data, Header } from '../../node/messaging/model.js'

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

  /** A well-formed, self-consistent broadcast batch: one message per item, each with one JSON value. */
  build(namespace: string, items: { topic: string; value: unknown; tag?: string; dataId?: string; messageId?: string }[]): BatchPayload {
    const created = now()
    const data: Data[] = []
    const messages: BatchPayload['messages'] = items.map((item) => {
      const valueRaw = compactJson(JSON.stringify(item.value))
      const d: Data = { id: (item.dataId as DataId | undefined) ?? newId<DataId>(), validator: 'json', namespace, hash: dataHash({ valueRaw }), created, value: valueRaw }
      data.push(d)
      const refs = [{ id: d.id, hash: d.hash }]
      const header: Header = {
        id: (item.messageId as MessageId | undefined) ?? newId<MessageId>(),
        type: 'broadcast',
        txtype: 'batch_pin',
        author: this.author,
        key: this.key,
        created,
        namespace,
        topics: [item.topic],
        ...(item.tag ? { tag: item.tag } : {}),
        datahash: dataRefsHash(refs),
      }
      return { header, hash: messageHash(header), data: refs }
    })
    const id = newId<BatchId>()
    const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
    const { hash } = sealManifest({ id, tx, messages, data })
    return { id, type: 'broadcast', namespace, author: this.author, key: this.key, created, hash, tx, messages, data }
  }

  /**
   * Uploads the batch (or `text` instead of its serialization) and pins it with contexts sha256(topic) per
   * message topic. `pinnedHash` overrides the batch hash written on chain.
   */
  async publish(b: BatchPayload, opts: { pinnedHash?: Hash; text?: string } = {}): Promise<Published> {
    if (!this.chain) throw new Error('start() the rogue sender first')
    const payloadRef = await this.storage.upload(new TextEncoder().encode(opts.text ?? serializeBatch(b)), 'batch.json')
    const pinnedHash = opts.pinnedHash ?? b.hash
    const contexts = b.messages.flatMap((m) => m.header.topics.map((t) => broadcastContext(t)))
    const { txHash } = await this.chain.submitPinBatch({ txId: b.tx.id, batchId: b.id, batchHash: pinnedHash, payloadRef, contexts })
    return { batchId: b.id, payloadRef, txHash, pinnedHash }
  }
}
