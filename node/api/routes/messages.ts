import type { ParsedUrlQuery } from 'node:querystring'
import type { ApiRouter, Handler } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentData, presentEvent, presentMessage, presentTrace, presentTransaction } from '../present.js'
import { assertPageFits } from '../response-budget.js'
import { parseMessageInput } from '../../messaging/input.js'
import { parseUuid } from '../../core/ids.js'
import { ParleyError } from '../../core/errors.js'
import { type Message } from '../../model/index.js'

export function messageRoutes(r: ApiRouter<NodeServices>): void {
  r.post('/messages/broadcast', async (ctx, s, ns, q) => {
    const input = parseMessageInput(await readJsonBody(ctx), { allowGroup: false, limits: s.config.limits })
    const confirm = boolParam(q, 'confirm') ?? false
    const m = await s.sender.broadcast(ns, input, { confirm })
    sendJson(ctx, confirm ? 200 : 202, presentMessage(m))
  })

  // The spec's private send, and FireFly's `send/message` for the same body.
  const sendPrivate: Handler<NodeServices> = async (ctx, s, ns, q) => {
    const input = parseMessageInput(await readJsonBody(ctx), { allowGroup: true, limits: s.config.limits })
    const confirm = boolParam(q, 'confirm') ?? false
    const m = await s.sender.private(ns, input, { confirm })
    sendJson(ctx, confirm ? 200 : 202, presentMessage(m))
  }
  r.post('/messages/private', sendPrivate)
  r.post('/send/message', sendPrivate)

  r.get('/messages', (ctx, s, ns, q) => {
    const paging = parsePaging(q)
    const pending = boolParam(q, 'pending')
    const filter = parseFilter(q)
    const withData = wantsData(q)
    const list = s.query.messages.list({ namespace: ns, ...(pending !== undefined ? { pending } : {}), ...(filter ? { filter } : {}), ...paging })
    if (withData) assertPageFits({ items: list.length, bytes: s.query.data.valueBytes(list.flatMap((m) => m.data.map((d) => d.id))) }, paging.limit)
    sendJson(
      ctx,
      200,
      list.map((m) => presentMessage(m, { topicAlias: true, ...(withData ? { data: s.query.data.getMany(m.data.map((d) => d.id)) } : {}) })),
    )
  })

  r.get('/messages/:id', (ctx, s, ns, q) => {
    const m = messageIn(s, ns, ctx.params.id)
    sendJson(ctx, 200, presentMessage(m, { topicAlias: true, ...(wantsData(q) ? { data: s.query.data.getMany(m.data.map((d) => d.id)) } : {}) }))
  })

  // What happened to the message on this member, and why it waits (node/trace).
  r.get('/messages/:id/trace', (ctx, s, ns) => {
    const id = parseUuid(ctx.params.id, 'message id')
    const trace = s.tracer.trace(ns, id)
    if (!trace) throw new ParleyError('NOT_FOUND', `message ${id} not found in namespace ${ns}`)
    sendJson(ctx, 200, presentTrace(trace))
  })

  // The message's batch transaction (a `txid` leads here), and the events this member logged for it.
  r.get('/messages/:id/transaction', (ctx, s, ns) => {
    const m = messageIn(s, ns, ctx.params.id)
    const t = m.txid ? s.query.transactions.get(m.txid) : undefined
    if (!t) throw new ParleyError('NOT_FOUND', `message ${m.header.id} has no transaction here yet (it is not in a batch)`)
    sendJson(ctx, 200, presentTransaction(t))
  })
  r.get('/messages/:id/events', (ctx, s, ns, q) => {
    const m = messageIn(s, ns, ctx.params.id)
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.query.events.list({ namespace: ns, reference: m.header.id, ...(filter ? { filter } : {}), ...paging }).map(presentEvent))
  })

  r.get('/messages/:id/data', (ctx, s, ns) => {
    const m = messageIn(s, ns, ctx.params.id)
    sendJson(ctx, 200, s.query.data.getMany(m.data.map((d) => d.id)).map(presentData))
  })
}

/** The spec's `?data=true` and FireFly's `?fetchdata` ask for the same thing. */
function wantsData(q: ParsedUrlQuery): boolean {
  return (boolParam(q, 'fetchdata') ?? false) || (boolParam(q, 'data') ?? false)
}

function messageIn(s: NodeServices, ns: string, id: string | undefined): Message {
  const m = s.query.messages.get(parseUuid(id, 'message id'))
  if (!m || m.header.namespace !== ns) throw new ParleyError('NOT_FOUND', `message ${id} not found in namespace ${ns}`)
  return m
}
