import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { parsePaging, single } from '../query.js'
import { parseFilter } from '../filters.js'
import { parseUuid } from '../../core/ids.js'
import { presentBlockchainEvent } from '../present.js'
import { sendJsonText } from '../body.js'
import { ParleyError } from '../../core/errors.js'
import { BLOCKCHAIN_EVENT_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
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

  r.get(
    '/blockchainevents/:id',
    {
      summary: 'A BatchPin log this member has read, by id',
      tag: 'Blockchain events',
      operationId: 'getBlockchainEventByID',
      params: { id: UUID_PARAM('blockchain event id') },
      responses: { 200: { description: 'The blockchain event', schema: ref('BlockchainEvent') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const id = parseUuid(ctx.params.id, 'blockchain event id')
      const e = s.query.blockchainEvents.byIds([id]).get(id)
      if (!e) throw new ParleyError('NOT_FOUND', `blockchain event ${id} not found`)
      sendJsonText(ctx, presentBlockchainEvent(e, ns, s.config.chain.contract))
    },
  )
}
