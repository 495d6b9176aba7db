import type { JsonSchema } from '../route-doc.js'
import { OPERATION_TYPES } from '../../model/index.js'
import { hash, name, time, uuid } from './primitives.js'

/**
 * The components of the records FireFly keeps beside messages (namespaces, verifiers, transactions, operations, and
 * the statuses made of them), as node/api/present.ts writes them. Part of SCHEMAS (schemas.ts).
 */
export const RECORD_SCHEMAS = {
  Namespace: {
    type: 'object',
    properties: { name, networkName: { type: 'string' }, description: { type: 'string' }, created: time },
    required: ['name', 'networkName', 'description', 'created'],
  },
  Verifier: {
    type: 'object',
    properties: {
      hash: { ...hash, description: 'SHA-256 of the namespace, type and value (FireFly\'s Verifier.Seal)' },
      identity: uuid,
      namespace: { type: 'string' },
      type: { enum: ['ethereum_address', 'dx_peer_id'] },
      value: { type: 'string' },
      created: time,
    },
    required: ['hash', 'identity', 'namespace', 'type', 'value', 'created'],
  },
  VerifierRef: {
    type: 'object',
    properties: { type: { const: 'ethereum_address' }, value: { type: 'string', description: 'An Ethereum address' } },
    required: ['value'],
  },
  Transaction: {
    type: 'object',
    properties: {
      id: uuid,
      namespace: { type: 'string' },
      type: { enum: ['batch_pin', 'unpinned', 'data_publish'] },
      created: time,
      idempotencyKey: { type: 'string' },
      blockchainIds: { type: 'array', items: { type: 'string' }, description: 'The chain transactions that pinned it, as this member has read them' },
    },
    required: ['id', 'namespace', 'type', 'created', 'blockchainIds'],
  },
  Operation: {
    type: 'object',
    properties: {
      id: uuid,
      namespace: { type: 'string' },
      tx: { ...uuid, type: ['string', 'null'] },
      type: { enum: OPERATION_TYPES },
      status: { enum: ['Pending', 'Succeeded', 'Failed'] },
      plugin: { enum: ['ethereum', 'ipfs', 'p2p'] },
      input: { type: 'object', description: 'What the step acts on (a batch, a data item, a peer node), with FireFly\'s field names' },
      output: { type: 'object', description: 'What it produced: a transactionHash, a payloadRef' },
      error: { type: 'string', description: 'Why it failed, or (while Pending) why its last attempt did' },
      created: time,
      updated: time,
    },
    required: ['id', 'namespace', 'tx', 'type', 'status', 'plugin', 'input', 'created', 'updated'],
  },
  TransactionStatus: {
    type: 'object',
    properties: {
      status: { enum: ['Pending', 'Succeeded', 'Failed'] },
      details: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            type: { enum: ['Operation', 'BlockchainEvent', 'Batch'] },
            subtype: { type: 'string', description: 'The operation type, the event name, or the batch type' },
            status: { enum: ['Pending', 'Succeeded', 'Failed'] },
            timestamp: time,
            id: uuid,
            error: { type: 'string' },
            info: { type: 'object' },
          },
          required: ['type', 'status'],
        },
      },
    },
    required: ['status', 'details'],
  },
  MultipartyStatus: {
    type: 'object',
    properties: {
      enabled: { const: true },
      org: { type: 'object', properties: { status: { enum: ['registered', 'unregistered'] } }, required: ['status'] },
      node: { type: 'object', properties: { status: { enum: ['registered', 'unregistered'] } }, required: ['status'] },
      contracts: {
        type: 'object',
        properties: {
          active: {
            type: 'object',
            properties: {
              index: { type: 'integer' },
              location: { type: 'object', properties: { address: { type: 'string' } } },
              firstEvent: { type: 'string' },
              info: { type: 'object', properties: { version: { type: 'integer' } } },
              status: { enum: ['synced', 'syncing', 'unknown'] },
            },
          },
        },
      },
    },
    required: ['enabled', 'org', 'node', 'contracts'],
  },
  PublishInput: {
    type: 'object',
    properties: { idempotencyKey: { type: 'string', description: 'Names the publish: a second one with the same key is a 409' } },
  },
} as const satisfies Record<string, JsonSchema>
