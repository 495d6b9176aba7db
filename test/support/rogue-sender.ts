import { Wallet } from 'ethers'
import { create } from 'kubo-rpc-client'
import type { NetworkDescription } from '../../network/description.js'
import { fundAccounts } from '../../network/chain/deploy.js'
import { rpcCall } from '../../network/probe.js'
import { createChain } from '../../node/chain/index.js'
import type { Chain } from '../../node/chain/types.js'
import { createIpfsStorage } from '../../node/storage/ipfs.js'
import { serializeBatch } from '../../node/batch/payload.js'
import { sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, identityTopic, messageHash } from '../../node/core/hashes.js'
import { compactJson } from '../../node/core/json.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { claimValue } from '../../node/definitions/identity-claim.js'
import { type BatchPayload, SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type BlobRef, type Data, type DatatypeRef, type Header } from '../../node/model/index.js'

export interface RogueItem {
  topic: string
  value?: unknown
  /** The value's JSON text exactly (instead of `value`). */
  valueRaw?: string
  tag?: string
  type?: Header['type']
  datatype?: DatatypeRef
  blob?: BlobRef
  dataId?: string
  messageId?: string
}

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
    const created = now()
    const data: Data[] = []
    const messages: BatchPayload['messages'] = items.map((item) => {
      const valueRaw = item.valueRaw ?? compactJson(JSON.stringify(item.value))
      const d: Data = {
        id: (item.dataId as DataId | undefined) ?? newId<DataId>(),
        validator: 'json',
        namespace,
        hash: dataHash({ valueRaw, ...(item.blob ? { blobHash: item.blob.hash } : {}) }),
        created,
        ...(item.datatype ? { datatype: item.datatype } : {}),
        value: valueRaw,
        ...(item.blob ? { blob: item.blob } : {}),
      }
      data.push(d)
      const refs = [{ id: d.id, hash: d.hash }]
      const header: Header = {
        id: (item.messageId as MessageId | undefined) ?? newId<MessageId>(),
        type: item.type ?? 'broadcast',
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

  /**
   * Registers the rogue's author as an org of the network, through the chain like any member (an org claim signed
   * with its own key), so that what it sends later is judged on its content, not refused for its author.
   */
  async registerOrg(): Promise<Published> {
    const name = /^did:firefly:org\/(.+)$/.exec(this.author)?.[1]
    if (!name) throw new Error(`author ${this.author} is not an org DID`)
    const claim = claimValue({ id: newId<IdentityId>(), did: this.author, type: 'org', name })
    return this.publish(this.build(SYSTEM_NAMESPACE, [{ topic: identityTopic(this.author), valueRaw: claim, tag: TAG_IDENTITY_CLAIM, type: 'definition' }]))
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
