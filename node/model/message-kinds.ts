/**
 * The message types and states, with no imports: the web console imports these types too (console/src/types.ts), so
 * its lists cannot drift from the model's. Keep this file free of imports (the console's type check has no Node).
 */

/** The message types this service sends and confirms; a batch carrying any other type is refused. */
export const MESSAGE_TYPES = ['broadcast', 'private', 'definition', 'groupinit'] as const
export type MessageType = (typeof MESSAGE_TYPES)[number]

/**
 * `ready`: accepted by this node and waiting for its batch's pin; `pending`: received from another member and not yet
 * confirmed; `confirmed`; `rejected`: ordered but refused (e.g. a datatype conflict or failed validation).
 */
export type MessageState = 'ready' | 'pending' | 'confirmed' | 'rejected'
