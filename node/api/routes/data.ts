import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { readMultipart } from '../multipart.js'
import { parsePaging } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentData } from '../present.js'
import { assertPageFits } from '../response-budget.js'
import { ParleyError } from '../../core/errors.js'
import { parseUuid, type DataId } from '../../core/ids.js'
import { optString } from '../../core/input.js'
import type { ErrorCode } from '../../core/errors.js'
import type { Context } from 'koa'
import { DATA_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
import { UUID_PARAM } from '../openapi/params.js'

const DATA_ID = { id: UUID_PARAM('data id') }

export function dataRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/data',
    {
      summary: 'List data items, newest first',
      tag: 'Data',
      operationId: 'getData',
      paging: true,
      filters: DATA_FIELDS,
      responses: { 200: { description: 'The data items', schema: listOf('Data') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER', 'PAYLOAD_TOO_LARGE'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      const query = { ...(filter ? { filter } : {}), ...paging }
      assertPageFits(s.query.data.listValueBytes(ns, query), paging.limit)
      sendJson(ctx, 200, s.query.data.list(ns, query).map(presentData))
    },
  )

  // 200, as Parley's API promises (FireFly answers 201). A JSON body is a value; a multipart form carries a blob.
  r.post(
    '/data',
    {
      summary: 'Upload a data item: a JSON value, or a blob as a multipart form',
      description: 'The item can then be sent in a message by its id. A blob is stored on this member and travels with the message that carries it.',
      tag: 'Data',
      operationId: 'postData',
      body: { json: ref('DataInput'), multipart: ref('BlobUpload') },
      responses: { 200: { description: 'The data item stored', schema: ref('Data') } },
      errors: ['INVALID_JSON', 'INVALID_FIELD', 'BAD_REQUEST', 'SCHEMA_VALIDATION_FAILED', 'UNKNOWN_DATATYPE', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'STORAGE_FULL', 'TOO_MANY_REQUESTS', 'REQUEST_TIMEOUT'],
    },
    async (ctx, s, ns) => {
      const d =
        ctx.request.type === 'multipart/form-data'
          ? await s.uploader.uploadBlob(ns, await readMultipart(ctx))
          : await s.uploader.uploadValue(ns, await readJsonBody(ctx))
      sendJson(ctx, 200, presentData(d))
    },
  )

  const one = (s: NodeServices, id: string | undefined, ns: string) => {
    const d = s.query.data.get(parseUuid(id, 'data id'))
    if (!d || d.namespace !== ns) throw new ParleyError('NOT_FOUND', `data ${id} not found in namespace ${ns}`)
    return d
  }
  r.get(
    '/data/:id',
    {
      summary: 'A data item by id',
      tag: 'Data',
      operationId: 'getDataByID',
      params: DATA_ID,
      responses: { 200: { description: 'The data item', schema: ref('Data') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => sendJson(ctx, 200, presentData(one(s, ctx.params.id, ns))),
  )
  r.get(
    '/data/:id/value',
    {
      summary: 'The value of a data item, as it was stored',
      tag: 'Data',
      operationId: 'getDataValue',
      params: DATA_ID,
      responses: { 200: { description: 'The JSON value (`null` for a blob without metadata)', schema: {} } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const d = one(s, ctx.params.id, ns)
      ctx.status = 200
      ctx.type = 'application/json'
      ctx.body = d.value ?? 'null'
    },
  )

  // FireFly's publish routes: the body `{idempotencyKey?}` may be left out.
  const publishErrors: readonly ErrorCode[] = ['INVALID_ID', 'INVALID_JSON', 'INVALID_FIELD', 'NOT_FOUND', 'CONFLICT', 'UNAVAILABLE', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE', 'TOO_MANY_REQUESTS', 'REQUEST_TIMEOUT']
  r.post(
    '/data/:id/value/publish',
    {
      summary: "Publish a data item's value to shared storage",
      description: 'Uploads the value as stored and records its IPFS CID as the data item\'s `public`: a `data_publish` transaction with one `sharedstorage_upload_value` operation.',
      tag: 'Data',
      operationId: 'postDataValuePublish',
      params: DATA_ID,
      body: { description: 'Optional', json: ref('PublishInput') },
      responses: { 200: { description: 'The data item with its `public` reference', schema: ref('Data') } },
      errors: publishErrors,
    },
    async (ctx, s, ns) => {
      const id = parseUuid<DataId>(ctx.params.id, 'data id')
      sendJson(ctx, 200, presentData(await s.publisher.publishValue(ns, id, await publishKey(ctx))))
    },
  )
  r.post(
    '/data/:id/blob/publish',
    {
      summary: "Publish a data item's blob to shared storage",
      description: 'Streams the blob to IPFS and records its CID as `blob.public`: a `data_publish` transaction with one `sharedstorage_upload_blob` operation.',
      tag: 'Data',
      operationId: 'postDataBlobPublish',
      params: DATA_ID,
      body: { description: 'Optional', json: ref('PublishInput') },
      responses: { 200: { description: 'The data item with its `blob.public` reference', schema: ref('Data') } },
      errors: publishErrors,
    },
    async (ctx, s, ns) => {
      const id = parseUuid<DataId>(ctx.params.id, 'data id')
      sendJson(ctx, 200, presentData(await s.publisher.publishBlob(ns, id, await publishKey(ctx))))
    },
  )

  r.delete(
    '/data/:id',
    {
      summary: 'Delete a data item no message carries',
      description: 'A data item a message carries is refused (409); FireFly deletes it and leaves the message without it. A blob no other data item refers to goes with it.',
      tag: 'Data',
      operationId: 'deleteData',
      params: DATA_ID,
      responses: { 204: { description: 'Deleted' } },
      errors: ['INVALID_ID', 'NOT_FOUND', 'CONFLICT'],
    },
    async (ctx, s, ns) => {
      await s.dataRemover.delete(ns, parseUuid<DataId>(ctx.params.id, 'data id'))
      ctx.status = 204
    },
  )

  r.get(
    '/data/:id/blob',
    {
      summary: 'The blob of a data item',
      description: 'A blob announced by another member is served once this member has fetched and verified it; 404 before.',
      tag: 'Data',
      operationId: 'getDataBlob',
      params: DATA_ID,
      responses: {
        200: {
          description: "The blob's bytes, with its name as Content-Disposition",
          type: 'application/octet-stream',
          schema: { type: 'string', contentMediaType: 'application/octet-stream' },
          headers: {
            'x-ff-blob-hash-sha256': { description: "The blob's SHA-256, hex" },
            'x-ff-blob-size': { description: 'Its size in bytes', schema: { type: 'integer' } },
          },
        },
      },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    async (ctx, s, ns) => {
      const d = one(s, ctx.params.id, ns)
      if (!d.blob) throw new ParleyError('NOT_FOUND', `data ${d.id} has no blob`)
      // A blob announced by another member is served once fetched and verified, not before.
      const held = await s.query.heldBlob(d.blob.hash)
      if (!held) throw new ParleyError('NOT_FOUND', `this node does not hold the blob ${d.blob.hash} of data ${d.id} (yet)`)
      ctx.status = 200
      ctx.type = 'application/octet-stream'
      ctx.length = held.size
      ctx.set('x-ff-blob-hash-sha256', d.blob.hash)
      ctx.set('x-ff-blob-size', String(held.size))
      if (d.blob.name) ctx.set('Content-Disposition', contentDisposition(d.blob.name))
      ctx.body = held.stream
    },
  )
}

/** FireFly's PublishInput `{idempotencyKey?}`; no body at all is an empty one. */
async function publishKey(ctx: Context): Promise<string | undefined> {
  if (!ctx.request.length && !ctx.get('transfer-encoding')) return undefined
  const body = await readJsonBody(ctx)
  if (body.kind !== 'object') throw new ParleyError('INVALID_FIELD', 'the request body must be a JSON object {idempotencyKey?}')
  const key = optString(body.get('idempotencyKey'), 'idempotencyKey')
  return key === '' ? undefined : key
}

/**
 * `attachment` with the blob's name (its last path segment): a plain-ASCII `filename` for old clients and the
 * exact name as RFC 5987 `filename*`. Header values cannot carry control or non-Latin-1 characters.
 */
function contentDisposition(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1) || name
  const ascii = base.replace(/[^\x20-\x7e]|["\\]/g, '_')
  let encoded: string
  try {
    encoded = encodeURIComponent(base).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  } catch {
    return `attachment; filename="${ascii}"` // a lone surrogate has no UTF-8 form
  }
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`
}
