import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { boolParam, parsePaging, single } from '../query.js'
import { eventRenderer, presentBatch, presentEvent, presentEventMessage } from '../present.js'
import { andEquals, parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import { parseHash, parseUuid } from '../../core/ids.js'
import { BATCH_FIELDS, EVENT_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
import { flag, UUID_PARAM } from '../openapi/params.js'

/** The node's event log and its batches, read-only. */
export function eventRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/events',
    {
      summary: 'List events, newest first',
      tag: 'Events',
      operationId: 'getEvents',
      query: {
        sort: { description: '`sequence` (or `+sequence`) lists oldest first' },
        ascending: flag('Oldest first'),
        fetchreferences: flag('Include the object each event refers to (message, datatype, identity, transaction, blockchain event)'),
        fetchdigests: flag('Parley-only, with `fetchreferences`: each message\'s data as `[{id, hash, digest}]`, the digest of the fields its batch carried with the item'),
      },
      paging: true,
      filters: EVENT_FIELDS,
      responses: { 200: { description: 'The events', schema: listOf('Event') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const sort = single(q, 'sort')
      const ascending = boolParam(q, 'ascending') ?? (sort === 'sequence' || sort === '+sequence')
      const filter = parseFilter(q)
      const events = s.query.events.list({ namespace: ns, ...(filter ? { filter } : {}), ...paging, ascending })
      // The referred objects of the whole page are read with one query per kind, not one read per event.
      if (boolParam(q, 'fetchreferences') ?? false) {
        const enriched = s.query.events.enrich(events)
        const digests = (boolParam(q, 'fetchdigests') ?? false) ? s.query.dataDigests(enriched.flatMap((e) => (e.refs.message ? [e.refs.message] : []))) : undefined
        const render = eventRenderer({ contract: s.config.chain.contract }, digests ? (m) => presentEventMessage(m, digests.get(m)) : undefined)
        sendJson(ctx, 200, enriched.map(render))
      } else sendJson(ctx, 200, events.map(presentEvent))
    },
  )

  r.get(
    '/events/:eid',
    {
      summary: 'An event by id',
      tag: 'Events',
      operationId: 'getEventByID',
      params: { eid: UUID_PARAM('event id') },
      query: { fetchreference: flag('Include the object the event refers to'), fetchreferences: flag('The same as `fetchreference`') },
      responses: { 200: { description: 'The event', schema: ref('Event') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns, q) => {
      const id = parseUuid(ctx.params.eid, 'event id')
      const [e] = s.query.events.list({ namespace: ns, filter: andEquals(undefined, 'id', id), limit: 1, skip: 0 })
      if (!e) throw new ParleyError('NOT_FOUND', `event ${id} not found in namespace ${ns}`)
      if (boolParam(q, 'fetchreference') ?? boolParam(q, 'fetchreferences') ?? false) sendJson(ctx, 200, s.query.events.enrich([e]).map(eventRenderer({ contract: s.config.chain.contract }))[0]!)
      else sendJson(ctx, 200, presentEvent(e))
    },
  )

  r.get(
    '/batches',
    {
      summary: 'List batches, newest first',
      tag: 'Batches',
      operationId: 'getBatches',
      paging: true,
      filters: BATCH_FIELDS,
      responses: { 200: { description: 'The batches', schema: listOf('Batch') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.query.batches.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentBatch))
    },
  )

  r.get(
    '/batches/:id',
    {
      summary: 'A batch by id',
      tag: 'Batches',
      operationId: 'getBatchByID',
      params: { id: UUID_PARAM('batch id') },
      query: {
        hash: {
          description: "Of the batches held under this id, the one with this hash; without it, the one pinned first by its own key, else this member's own, else the one of smallest hash",
          // What parseHash takes: 32 bytes of hex, either case, with or without 0x.
          schema: { type: 'string', pattern: '^(0[xX])?[0-9a-fA-F]{64}$' },
        },
      },
      responses: { 200: { description: 'The batch', schema: ref('Batch') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, _ns, q) => {
      const id = parseUuid(ctx.params.id, 'batch id')
      const raw = single(q, 'hash')
      const b = raw === undefined ? s.query.batches.get(id) : s.query.batches.byIdHash(id, parseHash(raw, 'hash'))
      if (!b) throw new ParleyError('NOT_FOUND', `batch ${ctx.params.id}${raw === undefined ? '' : ` with hash ${raw}`} not found`)
      sendJson(ctx, 200, presentBatch(b))
    },
  )
}
