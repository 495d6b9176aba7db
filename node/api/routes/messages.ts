import type { ParsedUrlQuery } from 'node:querystring'
import type { ApiRouter, Handler } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging, single } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentData, presentEvent, presentMessage, presentTrace, presentTransaction } from '../present.js'
import { assertPageFits } from '../response-budget.js'
import { parseMessageInput } from '../../messaging/input.js'
import { parseHash, parseUuid, type Hash } from '../../core/ids.js'
import { ParleyError } from '../../core/errors.js'
import { type Message } from '../../model/index.js'
import { EVENT_FIELDS, MESSAGE_FIELDS } from '../../services.js'
import type { ErrorCode } from '../../core/errors.js'
import type { ParamDoc } from '../route-doc.js'
import { listOf, ref } from '../openapi/schemas.js'
import { CONFIRM, flag, sendResponses, UUID_PARAM } from '../openapi/params.js'

/** What a send can be refused with: its body, its data and datatypes, the member's limits and state, the wait. */
const SEND_ERRORS: readonly ErrorCode[] = [
  'INVALID_JSON',
  'INVALID_FIELD',
  'INVALID_ID',
  'SCHEMA_VALIDATION_FAILED',
  'UNKNOWN_DATATYPE',
  'UNKNOWN_IDENTITY',
  'NOT_FOUND',
  'CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'MESSAGE_REJECTED',
  'CONFIRM_TIMEOUT',
  'UNAVAILABLE',
  'STORAGE_FULL',
  'TOO_MANY_REQUESTS',
  'REQUEST_TIMEOUT',
]

const FETCH_DATA: Readonly<Record<string, ParamDoc>> = {
  fetchdata: flag("Include each message's data values inline"),
  data: flag('The same as `fetchdata`'),
}
const MESSAGE_ID = { id: UUID_PARAM('message id') }
/** Which of the messages held under one id (a member may send one under an id another used): docs/api.md. */
const MESSAGE_HASH: Readonly<Record<string, ParamDoc>> = {
  hash: {
    description: "Of the messages held under this id, the one with this hash; without it, the confirmed one pinned first, else this member's own, else the one of smallest hash",
    // What parseHash takes: 32 bytes of hex, either case, with or without 0x.
    schema: { type: 'string', pattern: '^(0[xX])?[0-9a-fA-F]{64}$' },
  },
}
/** What a broadcast and a private send say alike: FireFly's message body, `?confirm`, the message as the answer. */
const SEND = {
  tag: 'Messages',
  query: { confirm: CONFIRM },
  body: { json: ref('MessageInput') },
  responses: sendResponses('Message', 'message'),
  errors: SEND_ERRORS,
} as const

export function messageRoutes(r: ApiRouter<NodeServices>): void {
  r.post(
    '/messages/broadcast',
    {
      ...SEND,
      summary: 'Broadcast a message to every member',
      description: 'The message and its data go to shared storage (IPFS) in a batch, pinned on the chain; every member confirms it in the same order.',
      operationId: 'postNewMessageBroadcast',
    },
    async (ctx, s, ns, q) => {
      const input = parseMessageInput(await readJsonBody(ctx), { allowGroup: false, limits: s.config.limits })
      const confirm = boolParam(q, 'confirm') ?? false
      const m = await s.sender.broadcast(ns, input, { confirm })
      sendJson(ctx, confirm ? 200 : 202, presentMessage(m))
    },
  )

  // Parley's private send, and FireFly's `send/message` for the same body.
  const sendPrivate: Handler<NodeServices> = async (ctx, s, ns, q) => {
    const input = parseMessageInput(await readJsonBody(ctx), { allowGroup: true, limits: s.config.limits })
    const confirm = boolParam(q, 'confirm') ?? false
    const m = await s.sender.private(ns, input, { confirm })
    sendJson(ctx, confirm ? 200 : 202, presentMessage(m))
  }
  const privateDoc = {
    ...SEND,
    summary: 'Send a private message to a group of members',
    description: 'The recipients are given as `group.members` (org names or DIDs) or as a group hash in `header.group`. The batch goes to each member over the private exchange; only its hash is pinned on the chain.',
    operationId: 'postNewMessagePrivate',
  } as const
  r.post('/messages/private', privateDoc, sendPrivate)
  r.post('/send/message', { ...privateDoc, summary: 'Send a private message (the same as messages/private)', operationId: 'postSendMessage' }, sendPrivate)

  r.get(
    '/messages',
    {
      summary: 'List messages, newest first',
      tag: 'Messages',
      operationId: 'getMsgs',
      query: { ...FETCH_DATA, pending: flag('Only messages not yet confirmed (true) or only confirmed ones (false)') },
      paging: true,
      filters: MESSAGE_FIELDS,
      responses: { 200: { description: 'The messages', schema: listOf('Message') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER', 'PAYLOAD_TOO_LARGE'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const pending = boolParam(q, 'pending')
      const filter = parseFilter(q)
      const withData = wantsData(q)
      const list = s.query.messages.list({ namespace: ns, ...(pending !== undefined ? { pending } : {}), ...(filter ? { filter } : {}), ...paging })
      if (withData) assertPageFits({ items: list.length, bytes: s.query.data.valueBytes(list.flatMap((m) => m.data)) }, paging.limit)
      sendJson(
        ctx,
        200,
        list.map((m) => presentMessage(m, { topicAlias: true, ...(withData ? { data: s.query.data.getMany(m.data) } : {}) })),
      )
    },
  )

  r.get(
    '/messages/:id',
    {
      summary: 'A message by id',
      tag: 'Messages',
      operationId: 'getMsgByID',
      params: MESSAGE_ID,
      query: { ...FETCH_DATA, ...MESSAGE_HASH },
      responses: { 200: { description: 'The message', schema: ref('Message') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns, q) => {
      const m = messageIn(s, ns, ctx.params.id, q)
      sendJson(ctx, 200, presentMessage(m, { topicAlias: true, ...(wantsData(q) ? { data: s.query.data.getMany(m.data) } : {}) }))
    },
  )

  // What happened to the message on this member, and why it waits (node/trace).
  r.get(
    '/messages/:id/trace',
    {
      summary: 'What happened to a message on this member, and why it waits',
      tag: 'Messages',
      operationId: 'getMsgTrace',
      params: MESSAGE_ID,
      query: MESSAGE_HASH,
      responses: { 200: { description: "The message's timeline on this member, oldest first", schema: ref('MessageTrace') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns, q) => {
      const id = parseUuid(ctx.params.id, 'message id')
      const trace = s.tracer.trace(ns, id, hashParam(q))
      if (!trace) throw new ParleyError('NOT_FOUND', `message ${id} not found in namespace ${ns}`)
      sendJson(ctx, 200, presentTrace(trace))
    },
  )

  // The message's batch transaction (a `txid` leads here), and the events this member logged for it.
  r.get(
    '/messages/:id/transaction',
    {
      summary: "A message's transaction: its batch's, with the chain transactions that pinned it",
      tag: 'Messages',
      operationId: 'getMsgTxn',
      params: MESSAGE_ID,
      query: MESSAGE_HASH,
      responses: { 200: { description: 'The transaction', schema: ref('Transaction') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns, q) => {
      const m = messageIn(s, ns, ctx.params.id, q)
      const t = m.txid ? s.query.transactions.get(m.txid) : undefined
      if (!t) throw new ParleyError('NOT_FOUND', `message ${m.header.id} has no transaction here yet (it is not in a batch)`)
      sendJson(ctx, 200, presentTransaction(t))
    },
  )
  r.get(
    '/messages/:id/events',
    {
      summary: 'The events this member logged for a message, newest first',
      tag: 'Messages',
      operationId: 'getMsgEvents',
      params: MESSAGE_ID,
      query: MESSAGE_HASH,
      paging: true,
      filters: EVENT_FIELDS,
      responses: { 200: { description: 'The events', schema: listOf('Event') } },
      errors: ['INVALID_ID', 'NOT_FOUND', 'INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const m = messageIn(s, ns, ctx.params.id, q)
      const paging = parsePaging(q)
      const filter = parseFilter(q, ['hash'])
      sendJson(ctx, 200, s.query.events.list({ namespace: ns, reference: m.header.id, referenceHash: m.hash, ...(filter ? { filter } : {}), ...paging }).map(presentEvent))
    },
  )

  r.get(
    '/messages/:id/data',
    {
      summary: 'The data of a message',
      tag: 'Messages',
      operationId: 'getMsgData',
      params: MESSAGE_ID,
      query: MESSAGE_HASH,
      responses: { 200: { description: "The message's data items, in its order", schema: listOf('Data') } },
      errors: ['INVALID_ID', 'INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns, q) => {
      const m = messageIn(s, ns, ctx.params.id, q)
      sendJson(ctx, 200, s.query.data.getMany(m.data).map(presentData))
    },
  )
}

/** Parley's `?data=true` and FireFly's `?fetchdata` ask for the same thing. */
function wantsData(q: ParsedUrlQuery): boolean {
  return (boolParam(q, 'fetchdata') ?? false) || (boolParam(q, 'data') ?? false)
}

/** `?hash=`, when given: which of the messages held under an id. */
function hashParam(q: ParsedUrlQuery): Hash | undefined {
  const raw = single(q, 'hash')
  return raw === undefined ? undefined : parseHash(raw, 'hash')
}

function messageIn(s: NodeServices, ns: string, id: string | undefined, q: ParsedUrlQuery): Message {
  const mid = parseUuid(id, 'message id')
  const hash = hashParam(q)
  const m = hash === undefined ? s.query.messages.get(mid) : s.query.messages.byRef(mid, hash)
  if (!m || m.header.namespace !== ns) throw new ParleyError('NOT_FOUND', `message ${id} not found in namespace ${ns}`)
  return m
}
