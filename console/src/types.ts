/**
 * The shapes of the node's public API as the console reads them (docs/api.md, node/api/present.ts). Only
 * the fields the console shows are listed; the API may send more.
 */

import type { MessageState, MessageType } from '../../node/model/message-kinds'

// The API's own domain types where they are plain (esbuild erases type imports, so nothing of the node is bundled):
// the console's list of states or types cannot drift from the model's.
export type { MessageState, MessageType }

export interface BlobRef {
  hash: string
  size: number
  name?: string
  public?: string
}

export interface MessageData {
  id: string
  hash: string
  validator?: string
  datatype?: { name: string; version: string }
  value?: unknown
  blob?: BlobRef
}

export interface MessageHeader {
  id: string
  type: MessageType
  txtype?: string
  author: string
  key: string
  created: string
  namespace: string
  topics: string[]
  tag?: string
  group?: string
  datahash?: string
  cid?: string
}

export interface ApiMessage {
  header: MessageHeader
  hash: string
  batch?: string
  txid?: string
  state: MessageState
  confirmed?: string
  rejectReason?: string
  data: MessageData[]
  pins?: string[]
}

export interface ApiEvent {
  id: string
  sequence: number
  type: string
  namespace: string
  reference: string
  tx?: string
  topic?: string
  created: string
  message?: ApiMessage
  blockchainEvent?: { output?: { author?: string }; info?: { blockNumber?: string } }
}

export interface NodeStatus {
  namespace: { name: string }
  org: { name: string; did: string; key: string; registered: boolean; id?: string }
  node: { name: string; did: string; registered: boolean; id?: string; p2p: string }
  chain: { connected: boolean; rpc: string; contract: string; headBlock?: number; lastProcessedBlock: number; error?: string }
  ipfs: { connected: boolean; api: string; gateway: string; version?: string; error?: string }
  database: { bytes: number; limitBytes: number; used: number; warning?: string }
  storage: { condition: 'ok' | 'full' | 'disk-full'; since?: string; detail?: string }
  healthy: boolean
  version: string
  started: string
}

export interface Identity {
  id: string
  did: string
  type: 'org' | 'node'
  parent?: string
  name: string
  created: string
  verifiers?: { type: string; value: string }[]
}

export interface Datatype {
  id: string
  message: string
  validator: string
  name: string
  version: string
  hash: string
  created: string
  value: unknown
}

export interface Group {
  name: string
  members: { identity: string; node: string }[]
  hash: string
  created: string
  message?: string
}

export interface Batch {
  id: string
  type: string
  author: string
  key: string
  group?: string
  created: string
  hash: string
  manifest: { messages?: { id: string }[]; data?: { id: string }[] }
  tx: { type: string; id: string }
  payloadRef?: string
  state: string
  reason?: string
}

export interface Subscription {
  id: string
  name: string
  transport: string
  filter: { events?: string; topic?: string; message?: Record<string, string> }
  options: { firstEvent?: string; readAhead?: number }
  created: string
  status?: { currentOffset: number }
}

export interface TraceStep {
  at: string
  step: string
  detail: string
  batch?: string
  cid?: string
  peer?: string
  org?: string
  state?: string
  tx?: string
  chainTx?: string
  block?: number
  blob?: string
  reason?: string
}

export interface Waiting {
  reason: string
  detail: string
  org?: string
  since?: string
}

export interface Trace {
  message: string
  org: string
  node: string
  state: string
  timeline: TraceStep[]
  waiting?: Waiting
}

export interface DataItem {
  id: string
  hash: string
  blob?: BlobRef
}
