import type { StartFrame } from './frames.js'
import { filterFromQuery } from '../subscription-input.js'

/**
 * The start a connection's query asks for (FireFly's `processAutoStart` in `websocket_connection.go`): present when the query has
 * `ephemeral` or `name`. Flags count as set when present bare or with any value but `false`. `filter.*` keys become
 * the filter (a bad expression throws, for a `protocol_error`); unknown parameters (old clients send
 * `changeevents`) are ignored.
 */
export function startFromQuery(params: URLSearchParams): StartFrame | undefined {
  const ephemeral = flag(params, 'ephemeral')
  const name = params.get('name') ?? undefined
  if (!ephemeral && !name) return undefined
  const options: Record<string, unknown> = {}
  const readAhead = params.get('readahead')
  if (readAhead !== null) options.readAhead = /^\d+$/.test(readAhead) ? Number(readAhead) : readAhead
  if (params.has('batch')) options.batch = flag(params, 'batch')
  const batchTimeout = params.get('batchtimeout')
  if (batchTimeout !== null) options.batchTimeout = batchTimeout
  const filter = [...params.entries()].filter(([k]) => k.startsWith('filter.'))
  const autoack = params.has('autoack') ? flag(params, 'autoack') : undefined
  const namespace = params.get('namespace') ?? undefined
  return {
    type: 'start',
    ...(namespace ? { namespace } : {}),
    ...(name ? { name } : {}),
    ephemeral,
    ...(autoack !== undefined ? { autoack } : {}),
    ...(filter.length > 0 ? { filter: filterFromQuery(filter) } : {}),
    ...(Object.keys(options).length > 0 ? { options } : {}),
  }
}

function flag(params: URLSearchParams, key: string): boolean {
  const v = params.get(key)
  return v !== null && v.toLowerCase() !== 'false'
}
