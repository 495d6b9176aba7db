import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { boolParam, parsePaging } from '../query.js'
import { presentIdentity } from '../present.js'
import { parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import { isUuid } from '../../core/ids.js'
import { type IdentityType } from '../../model/index.js'
import { IDENTITY_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
import { flag } from '../openapi/params.js'

/** The network map: orgs and nodes confirmed through the chain, the same in every namespace. */
export function networkRoutes(r: ApiRouter<NodeServices>): void {
  // With the nouns of their descriptions and of FireFly's operationIds (getNetworkOrgs, getNetworkNode, ...).
  for (const [path, type, noun, firefly] of [
    ['organizations', 'org', 'Organization', 'Org'],
    ['nodes', 'node', 'Node', 'Node'],
  ] as const) {
    r.get(
      `/network/${path}`,
      {
        summary: `List the ${path} of the network, confirmed through the chain`,
        tag: 'Network',
        operationId: `getNetwork${firefly}s`,
        query: { fetchverifiers: flag("Include each identity's verifiers (signing keys)") },
        paging: true,
        filters: IDENTITY_FIELDS,
        responses: { 200: { description: `The ${path}`, schema: listOf('Identity') } },
        errors: ['INVALID_FIELD', 'INVALID_FILTER'],
      },
      (ctx, s, _ns, q) => {
        const paging = parsePaging(q)
        const verifiers = boolParam(q, 'fetchverifiers') ?? false
        const filter = parseFilter(q)
        const list = s.query.identities.list(type, { ...(filter ? { filter } : {}), ...paging })
        sendJson(ctx, 200, list.map((i) => presentIdentity(i, verifiers ? s.query.identities.verifiersOf(i.id) : undefined)))
      },
    )
    r.get(
      `/network/${path}/:nameOrId`,
      {
        summary: `${noun} by name, DID or id, with its verifiers`,
        tag: 'Network',
        operationId: `getNetwork${firefly}`,
        params: { nameOrId: { description: 'A name, a DID (`did:firefly:...`) or a UUID' } },
        responses: { 200: { description: `The ${noun.toLowerCase()}`, schema: ref('Identity') } },
        errors: ['NOT_FOUND'],
      },
      (ctx, s) => {
        const i = lookup(s, type, ctx.params.nameOrId ?? '')
        if (!i) throw new ParleyError('NOT_FOUND', `no ${type} ${JSON.stringify(ctx.params.nameOrId)}`)
        sendJson(ctx, 200, presentIdentity(i, s.query.identities.verifiersOf(i.id)))
      },
    )
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
