import { ParleyError } from '../../core/errors.js'

/**
 * What a client asks on the event socket: FireFly's WSStart and WSAck
 * (https://hyperledger.github.io/firefly/latest/reference/types/wsstart). Filters and options are checked by whoever
 * starts.
 */
export type ClientFrame = StartFrame | AckFrame

export interface StartFrame {
  type: 'start'
  namespace?: string
  name?: string
  ephemeral: boolean
  autoack?: boolean
  filter?: unknown
  options?: unknown
}

export interface AckFrame {
  type: 'ack'
  /** An event id, or a batch id in batch mode; absent: the oldest unacknowledged frame. */
  id?: string
  subscription?: { id?: string; namespace?: string; name?: string }
}

/** Parses one text frame; anything out of shape is a ParleyError whose message goes back in a `protocol_error`. */
export function parseClientFrame(text: string): ClientFrame {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (err) {
    throw new ParleyError('BAD_REQUEST', `invalid frame: not JSON (${(err as Error).message})`)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ParleyError('BAD_REQUEST', 'invalid frame: expected a JSON object with a "type"')
  const o = v as Record<string, unknown>
  const type = o.type
  if (typeof type !== 'string') throw new ParleyError('BAD_REQUEST', 'invalid frame: "type" must be a string ("start" or "ack")')
  switch (type.toLowerCase()) {
    case 'start':
      return {
        type: 'start',
        ...optionalString(o, 'namespace'),
        ...optionalString(o, 'name'),
        ephemeral: optionalBoolean(o, 'ephemeral') ?? false,
        ...(o.autoack !== undefined && o.autoack !== null ? { autoack: optionalBoolean(o, 'autoack')! } : {}),
        ...(o.filter !== undefined && o.filter !== null ? { filter: o.filter } : {}),
        ...(o.options !== undefined && o.options !== null ? { options: o.options } : {}),
      }
    case 'ack': {
      const sub = o.subscription
      if (sub !== undefined && sub !== null && (typeof sub !== 'object' || Array.isArray(sub))) {
        throw new ParleyError('BAD_REQUEST', 'invalid ack: "subscription" must be an object {id?, namespace, name}')
      }
      const s = (sub ?? undefined) as Record<string, unknown> | undefined
      return {
        type: 'ack',
        ...optionalString(o, 'id'),
        ...(s ? { subscription: { ...optionalString(s, 'id'), ...optionalString(s, 'namespace'), ...optionalString(s, 'name') } } : {}),
      }
    }
    default:
      throw new ParleyError('BAD_REQUEST', `unknown frame type ${JSON.stringify(type).slice(0, 80)}: this socket takes "start" and "ack"`)
  }
}

function optionalString(o: Record<string, unknown>, key: string): Record<string, string> {
  const v = o[key]
  if (v === undefined || v === null || v === '') return {}
  if (typeof v !== 'string') throw new ParleyError('BAD_REQUEST', `invalid frame: "${key}" must be a string`)
  return { [key]: v }
}

function optionalBoolean(o: Record<string, unknown>, key: string): boolean | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'boolean') throw new ParleyError('BAD_REQUEST', `invalid frame: "${key}" must be true or false`)
  return v
}
