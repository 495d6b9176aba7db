import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { parsePaging, single } from '../query.js'
import { parseFilter } from '../filters.js'
import { parseUuid } from '../../core/ids.js'
import { presentBlockchainEvent } from '../present.js'
import { sendJsonText } from '../body.js'
import { BLOCKCHAIN_EVENT_FIELDS } from '../../db/query-fields.js'
import { listOf } from '../openapi/schemas.js'
import { UUID_PARAM } from '../openapi/params.js'

/** The BatchPin logs this node has read, newest first, in FireFly's blockchain event shape. */
export function blockchainEventRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/blockchainevents',
    {
      summary: 'List the BatchPin logs this member has read, newest first',
      tag: 'Blockchain events',
      operationId: 'getBlockchainEvents',
      query: { batch: UUID_PARAM('batch whose pin to list') },
      paging: true,
      filters: BLOCKCHAIN_EVENT_FIELDS,
      responses: { 200: { description: 'The blockchain events', schema: listOf('BlockchainEvent') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const batchParam = single(q, 'batch')
      const batch = batchParam !== undefined ? parseUuid(batchParam, 'batch') : undefined
      // `batch` (the events that pinned one batch) is this route's own parameter, not one of FireFly's filter fields.
      const filter = parseFilter(q, ['batch'])
      sendJsonText(ctx, s.query.blockchainEvents.list({ ...paging, ...(batch ? { batchId: batch } : {}), ...(filter ? { filter } : {}) }).map((e) => presentBlockchainEvent(e, ns, s.config.chain.contract)))
    },
  )
}
