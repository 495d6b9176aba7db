import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { boolParam, parsePaging, single } from '../query.js'
import { presentBatch, presentDatatype, presentEvent, presentMessage } from '../present.js'
import { parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import { parseUuid } from '../../core/ids.js'

/** The node's event log and its batches, read-only. */
export function eventRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/events', (ctx, s, ns, q) => {
    const paging = parsePaging(q)
    const sort = single(q, 'sort')
    const ascending = boolParam(q, 'ascending') ?? (sort === 'sequence' || sort === '+sequence')
    const filter = parseFilter(q)
    const events = s.query.events.list({ namespace: ns, ...(filter ? { filter } : {}), ...paging, ascending })
    const enrich = boolParam(q, 'fetchreferences') ?? false
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

  r.get('/batches', (ctx, s, ns, q) => {
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.query.batches.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentBatch))
  })

  r.get('/batches/:id', (ctx, s) => {
    const b = s.query.batches.get(parseUuid(ctx.params.id, 'batch id'))
    if (!b) throw new ParleyError('NOT_FOUND', `batch ${ctx.params.id} not found`)
    sendJson(ctx, 200, presentBatch(b))
  })
}
