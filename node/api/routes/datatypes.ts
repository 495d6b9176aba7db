import type { ApiRouter, Handler } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentDatatype, presentMessage } from '../present.js'
import { ParleyError } from '../../core/errors.js'
import { parseDatatypeRequest } from '../../definitions/define-datatype.js'
import { checkDatatypeName, checkDatatypeVersion } from '../../data/datatype.js'

/**
 * Datatypes: define one (a broadcast definition; it exists once confirmed) and look them up. The spec lists
 * both `broadcast/datatype` and FireFly's `datatypes` for defining; they are one handler.
 */
export function datatypeRoutes(r: ApiRouter<NodeServices>): void {
  const define: Handler<NodeServices> = async (ctx, s, ns, q) => {
    const req = parseDatatypeRequest(await readJsonBody(ctx))
    const confirm = boolParam(q, 'confirm') ?? false
    const m = await s.datatypeDefiner.define(ns, req, { confirm })
    sendJson(ctx, confirm ? 200 : 202, presentMessage(m, { topicAlias: true }))
  }
  r.post('/broadcast/datatype', define)
  r.post('/datatypes', define)

  r.get('/datatypes', (ctx, s, ns, q) => {
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.query.datatypes.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentDatatype))
  })

  r.get('/datatypes/:name/:version', (ctx, s, ns) => {
    const name = ctx.params.name ?? ''
    const version = ctx.params.version ?? ''
    checkDatatypeName(name)
    checkDatatypeVersion(version)
    const d = s.query.datatypes.byNameVersion(ns, name, version)
    if (!d) throw new ParleyError('NOT_FOUND', `datatype ${name}/${version} not found in namespace ${ns}`)
    sendJson(ctx, 200, presentDatatype(d))
  })
}
