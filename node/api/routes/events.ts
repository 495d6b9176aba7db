import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { boolParam, parsePaging, single } from '../query.js'
import { eventRenderer, presentBatch, presentEvent } from '../present.js'
import { andEquals, parseFilter } from '../filters.js'
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
    // The referred objects of the whole page are read with one query per kind, not one read per event.
    if (boolParam(q, 'fetchreferences') ?? false) sendJson(ctx, 200, s.query.events.enrich(events).map(eventRenderer({ contract: s.config.chain.contract })))
    else sendJson(ctx, 200, events.map(presentEvent))
  })

  r.get('/events/:eid', (ctx, s, ns, q) => {
    const id = parseUuid(ctx.params.eid, 'event id')
    const [e] = s.query.events.list({ namespace: ns, filter: andEquals(undefined, 'id', id), limit: 1, skip: 0 })
    if (!e) throw new ParleyError('NOT_FOUND', `event ${id} not found in namespace ${ns}`)
    if (boolParam(q, 'fetchreferences') ?? boolParam(q, 'fetchreference') ?? false) sendJson(ctx, 200, s.query.events.enrich([e]).map(eventRenderer({ contract: s.config.chain.contract }))[0]!)
    else sendJson(ctx, 200, presentEvent(e))
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
