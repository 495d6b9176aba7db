import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { boolParam, parsePaging } from '../query.js'
import { presentBatch, presentDatatype, presentEvent, presentMessage } from '../present.js'
import { parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import { parseUuid } from '../../core/ids.js'

/** The node's event log and its batches, read-only. */
export function eventRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/events', (ctx, s, ns) => {
    const paging = parsePaging(ctx.query)
    const ascending = boolParam(ctx.query, 'ascending') ?? (ctx.query.sort === 'sequence' || ctx.query.sort === '+sequence')
    const filter = parseFilter(ctx.query)
    const events = s.query.events.list({ namespace: ns, ...(filter ? { filter } : {}), ...paging, ascending })
    const enrich = boolParam(ctx.query, 'fetchreferences') ?? false
    sendJson(
      ctx,
      200,
      events.map((e) => {
        const m = enrich && e.type.startsWith('message_') ? s.query.messages.get(e.reference) : undefined
        const dt = enrich && e.type === 'datatype_confirmed' ? s.query.datatypes.byId(e.reference) : undefined
        return {
          ...presentEvent(e),
          ...(m ? { message: presentMessage(m, { topicAlias: true, batchIdAlias: true }) } : {}),
          ...(dt ? { datatype: presentDatatype(dt) } : {}),
        }
      }),
    )
  })

  r.get('/batches', (ctx, s, ns) => {
    const { limit, skip } = parsePaging(ctx.query)
    sendJson(ctx, 200, s.query.batches.list(ns, { limit, skip }).map(presentBatch))
  })

  r.get('/batches/:id', (ctx, s) => {
    const b = s.query.batches.get(parseUuid(ctx.params.id, 'batch id'))
    if (!b) throw new ParleyError('NOT_FOUND', `batch ${ctx.params.id} not found`)
    sendJson(ctx, 200, presentBatch(b))
  })
}
