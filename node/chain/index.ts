/** The chain seam's public face: the node imports from here and from types.ts, nothing else in this folder. */
export { createChain } from './chain.js'
export { BATCH_PIN_ACTION, BATCH_PIN_TOPIC, packUuids, unpackUuids } from './abi.js'
export type { BatchPinEvent, Chain, ChainOptions, ChainStatus, PinBatchRequest } from './types.js'
