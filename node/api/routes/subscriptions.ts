import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging, shorten } from '../query.js'
import { parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import type { GoJsonValue } from '../../core/json.js'
import { filterExpression } from '../../events/index.js'
import { EVENT_FILTER_FIELDS, type Subscription, type SubscriptionFilter } from '../../model/index.js'
import { SUBSCRIPTION_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
import { flag } from '../openapi/params.js'

const ID_OR_NAME = { id: { description: "The subscription's id or name" } }
const WRITE_ERRORS = ['INVALID_JSON', 'INVALID_FIELD', 'INVALID_FILTER', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'STORAGE_FULL', 'TOO_MANY_REQUESTS', 'REQUEST_TIMEOUT'] as const

/**
 * Durable subscriptions: FireFly's routes (POST creates, PUT creates or replaces by name, GET, DELETE by id), found
 * by id or by name, and also at `/namespaces/{ns}/subscriptions`, without `/api/v1` (docs/api.md).
 */
export function subscriptionRoutes(r: ApiRouter<NodeServices>): void {
  const spec = { unprefixed: true }

  r.get(
    '/subscriptions',
    {
      summary: 'List durable subscriptions',
      tag: 'Subscriptions',
      operationId: 'getSubscriptions',
      paging: true,
      filters: SUBSCRIPTION_FIELDS,
      responses: { 200: { description: 'The subscriptions', schema: listOf('Subscription') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.subscriptions.list(ns, { ...(filter ? { filter } : {}), ...paging }).map((sub) => presentSubscription(sub)))
    },
    spec,
  )

  r.get(
    '/subscriptions/:id',
    {
      summary: 'A subscription by id or name',
      tag: 'Subscriptions',
      operationId: 'getSubscriptionByID',
      params: ID_OR_NAME,
      query: { fetchstatus: flag('Include the offset its deliveries have been acknowledged to') },
      responses: { 200: { description: 'The subscription', schema: ref('Subscription') } },
      errors: ['INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns, q) => {
      const sub = found(s.subscriptions.get(ns, ctx.params.id ?? ''), ns, ctx.params.id)
      const status = (boolParam(q, 'fetchstatus') ?? false) ? { currentOffset: s.subscriptions.durableOffset(sub.id) } : undefined
      sendJson(ctx, 200, presentSubscription(sub, status))
    },
    spec,
  )

  r.post(
    '/subscriptions',
    {
      summary: 'Create a durable subscription',
      description: 'Events matching its filter are delivered to a WebSocket client that starts it by name (`/ws`), from where it last acknowledged.',
      tag: 'Subscriptions',
      operationId: 'postNewSubscription',
      body: { json: ref('SubscriptionInput') },
      responses: { 201: { description: 'The subscription created', schema: ref('Subscription') } },
      errors: WRITE_ERRORS,
    },
    async (ctx, s, ns) => {
      const sub = await s.subscriptions.create(ns, (await readJsonBody(ctx)).value)
      sendJson(ctx, 201, presentSubscription(sub))
    },
    spec,
  )

  // FireFly answers 200 whether it created or replaced.
  r.put(
    '/subscriptions',
    {
      summary: 'Create a subscription, or replace the one of that name',
      tag: 'Subscriptions',
      operationId: 'putSubscription',
      body: { json: ref('SubscriptionInput') },
      responses: { 200: { description: 'The subscription, created or replaced', schema: ref('Subscription') } },
      errors: WRITE_ERRORS,
    },
    async (ctx, s, ns) => {
      const { subscription } = await s.subscriptions.upsert(ns, (await readJsonBody(ctx)).value)
      sendJson(ctx, 200, presentSubscription(subscription))
    },
    spec,
  )

  r.delete(
    '/subscriptions/:id',
    {
      summary: 'Delete a subscription by id or name',
      tag: 'Subscriptions',
      operationId: 'deleteSubscription',
      params: ID_OR_NAME,
      responses: { 204: { description: 'Deleted' } },
      errors: ['NOT_FOUND'],
    },
    async (ctx, s, ns) => {
      found(await s.subscriptions.delete(ns, ctx.params.id ?? ''), ns, ctx.params.id)
      ctx.status = 204
    },
    spec,
  )
}

function found(sub: Subscription | undefined, ns: string, idOrName: string | undefined): Subscription {
  if (!sub) throw new ParleyError('NOT_FOUND', `subscription ${JSON.stringify(shorten(idOrName ?? ''))} not found in namespace ${ns}`)
  return sub
}

/**
 * FireFly's Subscription JSON: `{id, namespace, name, transport, filter, options, created, updated?, status?}`. The
 * filter is the nested form with `message`, `transaction` and `blockchainevent` always present (as FireFly's Go
 * structs are); options as FireFly writes them, keys sorted, with `withData: false` (websockets never carry data).
 */
export function presentSubscription(sub: Subscription, status?: { currentOffset: number }): { [key: string]: GoJsonValue } {
  const o = sub.options
  return {
    id: sub.id,
    namespace: sub.namespace,
    name: sub.name,
    transport: sub.transport,
    filter: presentFilter(sub.filter),
    options: {
      ...(o.batch !== undefined ? { batch: o.batch } : {}),
      ...(o.batchTimeout !== undefined ? { batchTimeout: o.batchTimeout } : {}),
      ...(o.firstEvent !== undefined ? { firstEvent: o.firstEvent } : {}),
      ...(o.readAhead !== undefined ? { readAhead: o.readAhead } : {}),
      withData: false,
    },
    created: sub.created,
    ...(sub.updated ? { updated: sub.updated } : {}),
    ...(status ? { status: { currentOffset: status.currentOffset } } : {}),
  }
}

function presentFilter(filter: SubscriptionFilter): { [key: string]: GoJsonValue } {
  const out: Record<string, string | Record<string, string>> = {}
  for (const field of EVENT_FILTER_FIELDS) {
    const [top, nested] = field.path
    const value = filterExpression(filter, field)
    if (nested === undefined) {
      if (value !== undefined) out[top] = value
      continue
    }
    const group = (out[top] ??= {}) as Record<string, string>
    if (value !== undefined) group[nested] = value
  }
  return out
}
