/** The events folder's public face: the node and transports import from here, nothing else in this folder. */
export { createEventStreams, type EventStreamsOptions } from './stream.js'
export { Confirmations } from './confirmations.js'
export { createEventEnricher, type EnricherSources } from './enrich.js'
export type { NodeEvent } from '../model/index.js'
export type { EventEnricher, EventReader, EventRenderer, EventStreamOptions, EventStreams, EventTransport, EventTransportContext } from './types.js'
