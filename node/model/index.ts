/**
 * The domain model: the shapes every part of the node shares, depending on nothing but core. Capabilities, seams and
 * the database import from here; nothing here imports them.
 */
export * from './message.js'
export * from './data.js'
export * from './datatype.js'
export * from './batch.js'
export * from './pin.js'
export * from './blockchain-event.js'
export * from './identity.js'
export * from './event.js'
export * from './system.js'
export * from './filter.js'
export * from './group.js'
export * from './subscription.js'
export * from './event-filter.js'
export * from './wait.js'
export * from './trace.js'
export * from './operation.js'
export * from './transaction.js'
