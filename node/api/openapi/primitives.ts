import { NAME_RE } from '../../core/names.js'

/** The JSON Schema pieces the API description's components are made of. */

export const uuid = { type: 'string', format: 'uuid' } as const
export const hash = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256, hex' } as const
export const time = { type: 'string', format: 'date-time', description: "RFC 3339 with nanoseconds, as FireFly's Go writes it" } as const
export const name = { type: 'string', pattern: NAME_RE.source } as const
/** Any JSON value. */
export const anyValue = {} as const
