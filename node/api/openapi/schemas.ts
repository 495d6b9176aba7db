import type { JsonSchema } from '../route-doc.js'
import { EVENT_TYPES, EVENT_FILTER_FIELDS, MESSAGE_TYPES, SUBSCRIPTION_TRANSPORTS, type BatchState, type MessageState, type TraceStepName, type WaitingReason } from '../../model/index.js'
import { NAME_RE } from '../../core/names.js'

/**
 * The shapes the API answers and takes, as JSON Schema components of the API description: FireFly's JSON as
 * node/api/present.ts and node/model/wire.ts write it. Routes refer to them with `ref('<Name>')`, so each shape is
 * written once; the event types and the subscription filter's keys come from the model's own lists.
 */

const uuid = { type: 'string', format: 'uuid' } as const
const hash = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256, hex' } as const
const time = { type: 'string', format: 'date-time', description: "RFC 3339 with nanoseconds, as FireFly's Go writes it" } as const
const name = { type: 'string', pattern: NAME_RE.source } as const
/** Any JSON value. */
const anyValue = {} as const

const messageStates = ['ready', 'pending', 'confirmed', 'rejected'] as const satisfies readonly MessageState[]
const batchStates = ['sealed', 'uploaded', 'pinned', 'sent', 'received', 'refused'] as const satisfies readonly BatchState[]
const traceSteps = ['accepted', 'sealed', 'uploaded', 'delivered', 'pinned', 'mined', 'received', 'blob_fetched', 'confirmed', 'rejected'] as const satisfies readonly TraceStepName[]
const waitingReasons = ['pin', 'batch', 'blob', 'datatype', 'identity', 'blocked', 'delivery'] as const satisfies readonly WaitingReason[]

const datatypeRef = { type: 'object', properties: { name: { type: 'string' }, version: { type: 'string' } }, required: ['name', 'version'] } as const
const blob = {
  type: 'object',
  properties: { hash, size: { type: 'integer' }, name: { type: 'string' }, public: { type: 'string', description: 'The IPFS CID of a broadcast blob' } },
  required: ['hash', 'size', 'name'],
} as const

const header = {
  type: 'object',
  properties: {
    id: uuid,
    cid: { ...uuid, description: 'The message this one answers' },
    type: { enum: MESSAGE_TYPES },
    txtype: { enum: ['batch_pin', 'none'] },
    author: { type: 'string', description: 'The author org, a DID' },
    key: { type: 'string', description: 'The signing key (an Ethereum address)' },
    created: time,
    namespace: { type: 'string' },
    group: { ...hash, description: 'The private group, by hash' },
    topics: { type: 'array', items: { type: 'string' } },
    topic: { type: 'array', items: { type: 'string' }, description: 'The same as `topics`, in query answers and events' },
    tag: { type: 'string' },
    datahash: hash,
  },
  required: ['id', 'type', 'author', 'key', 'created', 'namespace', 'topics', 'datahash'],
} as const

const inlineData = {
  type: 'object',
  description: 'A data item inside a message fetched with its data (`fetchdata`)',
  properties: { id: uuid, hash, validator: { type: 'string' }, datatype: datatypeRef, value: anyValue, blob },
  required: ['id', 'hash', 'validator'],
} as const

const identity = {
  type: 'object',
  properties: {
    id: uuid,
    did: { type: 'string' },
    type: { enum: ['org', 'node'] },
    parent: { ...uuid, description: "A node's org" },
    namespace: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    profile: { type: 'object', description: 'For a node, its private exchange endpoint and certificate' },
    messages: { type: 'object', properties: { claim: uuid }, required: ['claim'] },
    created: time,
    updated: time,
    verifiers: { type: 'array', items: { type: 'object', properties: { type: { type: 'string' }, value: { type: 'string' } }, required: ['type', 'value'] } },
  },
  required: ['id', 'did', 'type', 'namespace', 'name', 'messages', 'created'],
} as const

/** A subscription's filter: each key of the model's list (node/model/event-filter.ts), nested as the body nests it. */
function subscriptionFilter(): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  const groups = new Map<string, Record<string, JsonSchema>>()
  for (const field of EVENT_FILTER_FIELDS) {
    const [top, nested] = field.path
    const regex = { type: 'string', description: `A regular expression over ${field.name}` } as const
    if (nested === undefined) {
      properties[top] = regex
      continue
    }
    let group = groups.get(top)
    if (!group) {
      group = {}
      groups.set(top, group)
      properties[top] = { type: 'object', properties: group }
    }
    group[nested] = regex
  }
  return { type: 'object', properties }
}

const subscriptionOptions = {
  type: 'object',
  properties: {
    firstEvent: { type: 'string', description: '`newest`, `oldest`, or an event sequence number' },
    readAhead: { type: 'integer', minimum: 0 },
    batch: { type: 'boolean' },
    batchTimeout: { type: 'string', description: 'A Go duration, e.g. `500ms`' },
    withData: { type: 'boolean', description: 'Always false: WebSocket deliveries carry no data values' },
  },
} as const

export const SCHEMAS = {
  Error: {
    type: 'object',
    description: 'Every 4xx and 5xx answer: the error code (node/core/errors.ts), a colon, and what was wrong',
    properties: { error: { type: 'string', examples: ['NOT_FOUND: message 3f2b6c1e-8d4a-4b7e-9c0d-5a1e2f3b4c5d not found in namespace default'] } },
    required: ['error'],
  },
  Message: {
    type: 'object',
    properties: {
      header,
      localNamespace: { type: 'string' },
      hash,
      batch: uuid,
      batchID: { ...uuid, description: 'The same as `batch`, in events' },
      txid: uuid,
      state: { enum: messageStates },
      confirmed: time,
      rejectReason: { type: 'string' },
      data: { type: 'array', items: { anyOf: [{ type: 'object', properties: { id: uuid, hash }, required: ['id', 'hash'] }, inlineData] } },
      pins: { type: 'array', items: { type: 'string' } },
      idempotencyKey: { type: 'string' },
    },
    required: ['header', 'localNamespace', 'hash', 'state', 'data'],
  },
  MessageInput: {
    type: 'object',
    description: "FireFly's MessageInOut: a header, data given inline or by id, and for a private send the recipients",
    properties: {
      header: {
        type: 'object',
        properties: {
          tag: { ...name, description: 'For the application that processes the message' },
          topics: { type: 'array', items: { type: 'string' }, description: 'The ordered streams the message is on; `default` when none' },
          txtype: { enum: ['batch_pin', 'none', 'unpinned'] },
          author: { type: 'string', description: "This member's org (name or DID); its own when absent" },
          key: { type: 'string' },
          cid: uuid,
          group: { ...hash, description: 'A private group already formed, by hash (instead of `group`)' },
        },
      },
      data: {
        type: 'array',
        items: {
          type: 'object',
          properties: { id: { ...uuid, description: 'Data uploaded before' }, value: anyValue, validator: { enum: ['json', 'none'] }, datatype: datatypeRef },
        },
      },
      group: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          members: { type: 'array', items: { type: 'object', properties: { identity: { type: 'string' }, node: { type: 'string' } }, required: ['identity'] } },
        },
        required: ['members'],
      },
      idempotencyKey: { type: 'string' },
    },
  },
  Data: {
    type: 'object',
    properties: { id: uuid, validator: { type: 'string' }, namespace: { type: 'string' }, hash, created: time, datatype: datatypeRef, value: anyValue, blob },
    required: ['id', 'validator', 'namespace', 'hash', 'created', 'value'],
  },
  DataInput: {
    type: 'object',
    description: 'A value to store as a data item',
    properties: { value: anyValue, validator: { enum: ['json', 'none'] }, datatype: datatypeRef },
    required: ['value'],
  },
  BlobUpload: {
    type: 'object',
    description: 'A blob as a multipart form: the file, and optionally its metadata',
    properties: {
      file: { type: 'string', contentMediaType: 'application/octet-stream' },
      autometa: { type: 'string', description: "`true`: store the blob's name, size and type as the value" },
      metadata: { type: 'string', description: 'JSON text stored as the value' },
      validator: { type: 'string' },
      'datatype.name': { type: 'string' },
      'datatype.version': { type: 'string' },
    },
    required: ['file'],
  },
  Datatype: {
    type: 'object',
    properties: {
      id: uuid,
      message: uuid,
      validator: { const: 'json' },
      namespace: { type: 'string' },
      name: { type: 'string' },
      version: { type: 'string' },
      hash,
      created: time,
      value: { type: 'object', description: 'The JSON Schema values of this datatype are validated with' },
    },
    required: ['id', 'message', 'validator', 'namespace', 'name', 'version', 'hash', 'created', 'value'],
  },
  DatatypeInput: {
    type: 'object',
    properties: { name, version: { type: 'string' }, validator: { const: 'json' }, value: { type: 'object', description: 'A JSON Schema' } },
    required: ['name', 'version', 'value'],
  },
  Batch: {
    type: 'object',
    properties: {
      id: uuid,
      type: { enum: ['broadcast', 'private'] },
      namespace: { type: 'string' },
      node: uuid,
      author: { type: 'string' },
      key: { type: 'string' },
      group: hash,
      created: time,
      hash,
      manifest: { type: 'object', description: 'The messages and data of the batch, by id and hash' },
      tx: { type: 'object', properties: { type: { const: 'batch_pin' }, id: uuid }, required: ['type', 'id'] },
      payloadRef: { type: 'string', description: 'The IPFS CID of a broadcast batch' },
      state: { enum: batchStates },
      reason: { type: 'string', description: 'Why a batch was refused' },
    },
    required: ['id', 'type', 'namespace', 'author', 'key', 'created', 'hash', 'manifest', 'tx', 'state'],
  },
  Event: {
    type: 'object',
    properties: {
      id: uuid,
      sequence: { type: 'integer' },
      type: { enum: EVENT_TYPES },
      namespace: { type: 'string' },
      reference: { type: 'string', description: 'The id of what the event is about' },
      correlator: { type: 'string' },
      tx: uuid,
      topic: { type: 'string' },
      created: time,
      message: { $ref: '#/components/schemas/Message' },
      datatype: { $ref: '#/components/schemas/Datatype' },
      identity: { $ref: '#/components/schemas/Identity' },
      transaction: {
        type: 'object',
        properties: { id: uuid, namespace: { type: 'string' }, type: { type: 'string' }, created: time, blockchainIds: { type: 'array', items: { type: 'string' } } },
      },
      blockchainEvent: { $ref: '#/components/schemas/BlockchainEvent' },
    },
    required: ['id', 'sequence', 'type', 'namespace', 'reference', 'created'],
  },
  Group: {
    type: 'object',
    properties: {
      namespace: { type: 'string' },
      name: { type: 'string' },
      members: { type: 'array', items: { type: 'object', properties: { identity: { type: 'string' }, node: uuid }, required: ['identity', 'node'] } },
      localNamespace: { type: 'string' },
      message: uuid,
      hash,
      created: time,
    },
    required: ['namespace', 'name', 'members', 'localNamespace', 'hash', 'created'],
  },
  Identity: identity,
  BlockchainEvent: {
    type: 'object',
    properties: {
      id: uuid,
      sequence: { type: 'integer' },
      source: { const: 'ethereum' },
      namespace: { type: 'string' },
      name: { const: 'BatchPin' },
      protocolId: { type: 'string' },
      output: { type: 'object', description: "The BatchPin log's arguments" },
      info: { type: 'object', description: 'Where the log is on the chain' },
      timestamp: time,
      tx: { type: 'object', properties: { type: { const: 'batch_pin' }, id: uuid, blockchainId: { type: 'string' } } },
      batch: uuid,
    },
    required: ['id', 'sequence', 'source', 'namespace', 'name', 'protocolId', 'output', 'info', 'timestamp', 'tx'],
  },
  Subscription: {
    type: 'object',
    properties: {
      id: uuid,
      namespace: { type: 'string' },
      name: { type: 'string' },
      transport: { enum: SUBSCRIPTION_TRANSPORTS },
      filter: subscriptionFilter(),
      options: subscriptionOptions,
      created: time,
      updated: time,
      status: { type: 'object', properties: { currentOffset: { type: 'integer' } } },
    },
    required: ['id', 'namespace', 'name', 'transport', 'filter', 'options', 'created'],
  },
  SubscriptionInput: {
    type: 'object',
    properties: { name, transport: { enum: SUBSCRIPTION_TRANSPORTS }, filter: subscriptionFilter(), options: subscriptionOptions },
    required: ['name'],
  },
  MessageTrace: {
    type: 'object',
    properties: {
      message: uuid,
      org: { type: 'string' },
      node: { type: 'string' },
      state: { enum: messageStates },
      timeline: {
        type: 'array',
        items: { type: 'object', properties: { at: time, step: { enum: traceSteps }, detail: { type: 'string' } }, required: ['at', 'step', 'detail'] },
      },
      waiting: { type: 'object', properties: { reason: { enum: waitingReasons }, detail: { type: 'string' } }, required: ['reason', 'detail'] },
    },
    required: ['message', 'org', 'node', 'state', 'timeline'],
  },
  Status: {
    type: 'object',
    properties: {
      namespace: { type: 'object', properties: { name: { type: 'string' }, networkName: { type: 'string' } } },
      org: { type: 'object', properties: { name: { type: 'string' }, did: { type: 'string' }, key: { type: 'string' }, registered: { type: 'boolean' }, id: uuid } },
      node: { type: 'object', properties: { name: { type: 'string' }, did: { type: 'string' }, registered: { type: 'boolean' }, id: uuid, p2p: { type: 'string' } } },
      chain: { type: 'object' },
      ipfs: { type: 'object' },
      database: { type: 'object' },
      storage: { type: 'string' },
      healthy: { type: 'boolean' },
      multiparty: { type: 'object' },
      version: { type: 'string' },
      started: time,
    },
    required: ['namespace', 'org', 'node', 'healthy', 'version', 'started'],
  },
  Controls: {
    type: 'object',
    description: 'The test controls in force',
    properties: {
      exchange: {
        type: 'object',
        properties: { held: { type: 'array', items: { $ref: '#/components/schemas/DeliveryRule' } }, dropped: { type: 'array', items: { $ref: '#/components/schemas/DeliveryRule' } } },
        required: ['held', 'dropped'],
      },
      chain: { type: 'object', properties: { held: { type: 'boolean' } }, required: ['held'] },
      ipfs: { type: 'object', properties: { held: { type: 'boolean' } }, required: ['held'] },
    },
    required: ['exchange', 'chain', 'ipfs'],
  },
  DeliveryRule: {
    type: 'object',
    description: 'Which private deliveries from this member a control takes: those to an org, optionally of one message or batch',
    properties: { to: { type: 'string', description: "The receiving org's name" }, message: uuid, batch: uuid },
    required: ['to'],
    additionalProperties: false,
  },
  DropResult: {
    type: 'object',
    description: 'What a drop discarded: each (org, batch) whose deliveries will not be sent',
    properties: { dropped: { type: 'array', items: { $ref: '#/components/schemas/DeliveryRule' } } },
    required: ['dropped'],
  },
} as const satisfies Record<string, JsonSchema>

export type SchemaName = keyof typeof SCHEMAS

/** A reference to one of the components above. */
export function ref(name: SchemaName): JsonSchema {
  return { $ref: `#/components/schemas/${name}` }
}

/** A JSON array of one of the components. */
export function listOf(name: SchemaName): JsonSchema {
  return { type: 'array', items: ref(name) }
}
