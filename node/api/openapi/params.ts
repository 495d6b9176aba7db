import type { ParamDoc, SuccessResponses } from '../route-doc.js'
import { ref, type SchemaName } from './schemas.js'

/** Query and path parameters several routes read, described once. */

/** `?confirm=true` on a send or a definition (node/api/query.ts boolParam). */
export const CONFIRM: ParamDoc = {
  description: 'Wait until the message is confirmed (200) rather than answer once it is accepted (202)',
  schema: { type: 'boolean', default: false },
}

/** A flag read with boolParam: `true`, `1` or bare for true; `false` or `0` for false. */
export function flag(description: string): ParamDoc {
  return { description, schema: { type: 'boolean', default: false } }
}

export const UUID_PARAM = (what: string): ParamDoc => ({ description: `The ${what}, a UUID`, schema: { type: 'string', format: 'uuid' } })

/** A send's or a definition's answers: the message accepted, or confirmed when the caller waited. */
export function sendResponses(schema: SchemaName, what: string): SuccessResponses {
  return {
    200: { description: `With ?confirm=true: the ${what}, confirmed`, schema: ref(schema) },
    202: { description: `The ${what}, accepted and on its way`, schema: ref(schema) },
  }
}
