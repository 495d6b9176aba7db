import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { parsePaging } from '../query.js'
import { presentData } from '../present.js'
import { ParleyError } from '../../core/errors.js'
import { parseUuid } from '../../core/ids.js'

export function dataRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/data', (ctx, s, ns) => {
    const { limit, skip } = parsePaging(ctx.query)
    sendJson(ctx, 200, s.data.list(ns, limit, skip).map(presentData))
  })

  const one = (s: NodeServices, id: string | undefined, ns: string) => {
    const d = s.data.get(parseUuid(id, 'data id'))
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
}
