/** The events folder's public face: the node and transports import from here, nothing else in this folder. */
export { createEventStreams, type EventStreamsOptions } from './stream.js'
export { Confirmations } from './confirmations.js'
export { SubscriptionManager, type SubscriptionChange, type SubscriptionManagerDeps } from './subscriptions.js'
export { compileFilter, filterExpression, type EventMatcher } from './filter.js'
export { filterFromQuery, parseDurationMs, parseSubscriptionFilter, parseSubscriptionOptions } from './subscription-input.js'
export type { NodeEvent } from '../model/index.js'
export type { EventEnricher, EventReader, EventRenderer, EventStreamOptions, EventStreams, EventTransport, EventTransportContext } from './types.js'
