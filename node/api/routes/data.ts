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
import type { Context } from 'koa'

export function dataRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/data', (ctx, s, ns, q) => {
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    const query = { ...(filter ? { filter } : {}), ...paging }
    assertPageFits(s.query.data.listValueBytes(ns, query), paging.limit)
    sendJson(ctx, 200, s.query.data.list(ns, query).map(presentData))
  })

  // 200, as the spec says (FireFly answers 201). A JSON body is a value; a multipart form carries a blob.
  r.post('/data', async (ctx, s, ns) => {
    const d =
      ctx.request.type === 'multipart/form-data'
        ? await s.uploader.uploadBlob(ns, await readMultipart(ctx))
        : await s.uploader.uploadValue(ns, await readJsonBody(ctx))
    sendJson(ctx, 200, presentData(d))
  })

  const one = (s: NodeServices, id: string | undefined, ns: string) => {
    const d = s.query.data.get(parseUuid(id, 'data id'))
    if (!d || d.namespace !== ns) throw new ParleyError('NOT_FOUND', `data ${id} not found in namespace ${ns}`)
    return d
  }
  r.get('/data/:id', (ctx, s, ns) => sendJson(ctx, 200, presentData(one(s, ctx.params.id, ns))))
  r.get('/data/:id/value', (ctx, s, ns) => {
    const d = one(s, ctx.params.id, ns)
    ctx.status = 200
    ctx.type = 'application/json'
    ctx.body = d.value ?? 'null'
  })

  // FireFly's publish routes: the body `{idempotencyKey?}` may be empty.
  r.post('/data/:id/value/publish', async (ctx, s, ns) => {
    const id = parseUuid<DataId>(ctx.params.id, 'data id')
    sendJson(ctx, 200, presentData(await s.publisher.publishValue(ns, id, await publishKey(ctx))))
  })
  r.post('/data/:id/blob/publish', async (ctx, s, ns) => {
    const id = parseUuid<DataId>(ctx.params.id, 'data id')
    sendJson(ctx, 200, presentData(await s.publisher.publishBlob(ns, id, await publishKey(ctx))))
  })

  r.delete('/data/:id', async (ctx, s, ns) => {
    await s.dataRemover.delete(ns, parseUuid<DataId>(ctx.params.id, 'data id'))
    ctx.status = 204
  })

  r.get('/data/:id/blob', async (ctx, s, ns) => {
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
  })
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
