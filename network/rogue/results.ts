/** What each attack of a hostile member did, as the CLI prints it (`--json`, or one line) and the handle answers it. */
import type { DeliveryOutcome } from './exchange.js'

/** A pinBatch the attack sent. */
export interface PinSent {
  /** Whose key signed it, in words (`org1's key`, `Hardhat account #15`, `a fresh key`). */
  signedWith: string
  signer: string
  txId: string
  batchId: string
  batchHash: string
  payloadRef: string
  contexts: string[]
  txHash: string
  /** The block it was mined in; absent while the chain does not mine. */
  block?: number
}

export interface GarbagePinResult {
  attack: 'garbage-pin'
  topic: string
  pin: PinSent
}

export interface SquatPinResult {
  attack: 'squat-pin'
  /** The honest pin it went ahead of, when it was seen in the chain's pool. */
  victim?: { txHash: string; signer: string }
  pin: PinSent
}

export interface DeliverUnderResult {
  attack: 'deliver-under'
  /** The id it took: another batch's. */
  batchId: string
  group: string
  /** The messages of the batch delivered under that id. */
  messages: string[]
  delivery: DeliveryOutcome
}

export interface ReuseIdResult {
  attack: 'reuse-id'
  /** The id it took: another member's message's. */
  message: string
  /** The hash of its own message under that id. */
  hash: string
  batchId: string
  /** The group of the message it took the id of (or, for a data item's copy delivered first, its own); absent for a broadcast. */
  group?: string
  /** With a datatype: the data item it copied (its id and value), carried with that datatype by a message of its own. */
  data?: { id: string; datatype: { name: string; version: string } }
  deliveries: DeliveryOutcome[]
  pin: PinSent
}

export interface ForeignGroupResult {
  attack: 'foreign-group'
  group: string
  namespace: string
  /** Each member of the group: the org's DID and the name of the node it is paired with. */
  members: { identity: string; node: string }[]
  /** The org paired with a node that is not its own. */
  paired: { org: string; node: string }
  groupinit: string
  deliveries: DeliveryOutcome[]
  pin: PinSent
}

export interface ClaimNameResult {
  attack: 'claim-name'
  name: string
  did: string
  claim: string
  pin: PinSent
}

export interface FloodBlobsResult {
  attack: 'flood-blobs'
  to: string
  blobs: number
  bytesEach: number
  stored: number
  refused: number
  /** The first refusal's answer, when any. */
  refusal?: string
  hashes: string[]
}

export interface FloodBatchesResult {
  attack: 'flood-batches'
  to: string
  batches: number
  /** The bytes of the one data value each batch carries. */
  bytesEach: number
  stored: number
  refused: number
  /** The first refusal's answer, when any. */
  refusal?: string
  ids: string[]
}

export interface RepinPrivateResult {
  attack: 'repin-private'
  batchId: string
  group: string
  namespace: string
  /** The private message every member must confirm. */
  message: string
  /** The members delivered the batch before its pins. */
  heldFirst: string[]
  deliveries: DeliveryOutcome[]
  privatePin: PinSent
  /** The same id and hash pinned again, with a payload reference to something that is no batch. */
  broadcastPin: PinSent
}

export type RogueResult = GarbagePinResult | SquatPinResult | DeliverUnderResult | ReuseIdResult | ForeignGroupResult | ClaimNameResult | FloodBlobsResult | FloodBatchesResult | RepinPrivateResult

const pinText = (p: PinSent): string => `tx ${p.txHash} from ${p.signer} (${p.signedWith})${p.block !== undefined ? ` in block ${p.block}` : ', waiting in the pool'}`
const deliveryText = (d: DeliveryOutcome): string => (d.stored ? `${d.to} stored it` : `${d.to} refused it: ${d.refusal}`)

/** The result in one line. */
export function rogueLine(r: RogueResult): string {
  switch (r.attack) {
    case 'garbage-pin':
      return `pinned garbage batch ${r.pin.batchId} on topic ${r.topic}: ${pinText(r.pin)}`
    case 'squat-pin':
      return `pinned batch ${r.pin.batchId} first, with hash ${r.pin.batchHash.slice(0, 12)}…, ${r.pin.contexts.length} context(s) and payload ref ${JSON.stringify(r.pin.payloadRef)}: ${pinText(r.pin)}${r.victim ? `; ahead of ${r.victim.txHash} from ${r.victim.signer}` : ''}`
    case 'deliver-under':
      return `delivered a private batch of its own (group ${r.group}, message ${r.messages.join(', ')}) under batch id ${r.batchId}: ${deliveryText(r.delivery)}`
    case 'reuse-id':
      if (r.data) return `pinned a message of its own (hash ${r.hash.slice(0, 12)}…) carrying data ${r.data.id} of message ${r.message} with datatype ${r.data.datatype.name}/${r.data.datatype.version}, in batch ${r.batchId}${r.group ? `, delivered first: ${r.deliveries.map(deliveryText).join('; ') || 'to nobody'}` : ', published to shared storage'}; ${pinText(r.pin)}`
      return `pinned a message of its own (hash ${r.hash.slice(0, 12)}…) under message id ${r.message} in batch ${r.batchId}${r.group ? `, delivered first: ${r.deliveries.map(deliveryText).join('; ') || 'to nobody'}` : ', published to shared storage'}; ${pinText(r.pin)}`
    case 'foreign-group':
      return `pinned group ${r.group} pairing ${r.paired.org} with ${r.paired.node} (groupinit ${r.groupinit}): ${r.deliveries.map(deliveryText).join('; ') || 'delivered to nobody'}; ${pinText(r.pin)}`
    case 'claim-name':
      return `claimed the org name ${r.name} (${r.did}, message ${r.claim}): ${pinText(r.pin)}`
    case 'repin-private':
      return `pinned private batch ${r.batchId} (group ${r.group}, message ${r.message}) as it is, ${pinText(r.privatePin)}, and again as a broadcast of a payload that is no batch, ${pinText(r.broadcastPin)}; delivered ${r.heldFirst.length > 0 ? `first to ${r.heldFirst.join(', ')}, the rest after their refusal` : 'after every member refused that payload'}: ${r.deliveries.map(deliveryText).join('; ')}`
    case 'flood-blobs':
      return `put ${r.blobs} blob(s) of ${r.bytesEach} bytes nothing refers to at ${r.to}: ${r.stored} stored, ${r.refused} refused${r.refusal ? ` (first: ${r.refusal})` : ''}`
    case 'flood-batches':
      return `delivered ${r.batches} private batch(es) with a value of ${r.bytesEach} bytes, never pinned, to ${r.to}: ${r.stored} stored, ${r.refused} refused${r.refusal ? ` (first: ${r.refusal})` : ''}`
  }
}
