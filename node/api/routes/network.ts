import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { boolParam, parsePaging } from '../query.js'
import { presentIdentity } from '../present.js'
import { parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import { isUuid } from '../../core/ids.js'
import { type IdentityType } from '../../model/index.js'

/** The network map: orgs and nodes confirmed through the chain, the same in every namespace. */
export function networkRoutes(r: ApiRouter<NodeServices>): void {
  for (const [path, type] of [
    ['organizations', 'org'],
    ['nodes', 'node'],
  ] as const) {
    r.get(`/network/${path}`, (ctx, s, _ns, q) => {
      const paging = parsePaging(q)
      const verifiers = boolParam(q, 'fetchverifiers') ?? false
      const filter = parseFilter(q)
      const list = s.query.identities.list(type, { ...(filter ? { filter } : {}), ...paging })
      sendJson(ctx, 200, list.map((i) => presentIdentity(i, verifiers ? s.query.identities.verifiersOf(i.id) : undefined)))
    })
    r.get(`/network/${path}/:nameOrId`, (ctx, s) => {
      const i = lookup(s, type, ctx.params.nameOrId ?? '')
      if (!i) throw new ParleyError('NOT_FOUND', `no ${type} ${JSON.stringify(ctx.params.nameOrId)}`)
      sendJson(ctx, 200, presentIdentity(i, s.query.identities.verifiersOf(i.id)))
    })
  }
}

/** An identity by UUID, full DID, or bare name (FireFly's lookup strings). */
function lookup(s: NodeServices, type: IdentityType, key: string) {
  if (isUuid(key)) {
    const i = s.query.identities.byId(key.toLowerCase())
    return i?.type === type ? i : undefined
  }
  const did = key.startsWith('did:') ? key : `did:firefly:${type}/${key}`
  return s.query.identities.byDid(did)
}
