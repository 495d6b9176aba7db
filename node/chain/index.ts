/** The chain seam's public face: the node imports from here and from types.ts, nothing else in this folder. */
export { createChain } from './chain.js'
export { BATCH_PIN_TOPIC } from './abi.js'
export type { BatchPinEvent } from '../model/index.js'
export type { Chain, ChainOptions, ChainStatus, MinedPin, PinBatchRequest, PinSubmission } from './types.js'
export { pinSubmission } from './pin-submission.js'
