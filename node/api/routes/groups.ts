import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { parsePaging } from '../query.js'
import { parseFilter } from '../filters.js'
import { ParleyError } from '../../core/errors.js'
import { parseHash } from '../../core/ids.js'
import type { GoJsonValue } from '../../core/json.js'
import type { Group } from '../../model/index.js'
import { GROUP_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'

/**
 * The private groups this member is in, read-only: a member stores only its own groups, so no member lists or
 * answers a group it is not in. Groups come into being with a private send (and its groupinit), not through here.
 */
export function groupRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/groups',
    {
      summary: 'List the private groups this member is in, newest first',
      tag: 'Groups',
      operationId: 'getGroups',
      paging: true,
      filters: GROUP_FIELDS,
      responses: { 200: { description: 'The groups', schema: listOf('Group') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.query.groups.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentGroup))
    },
  )

  r.get(
    '/groups/:hash',
    {
      summary: 'A private group this member is in, by hash',
      tag: 'Groups',
      operationId: 'getGroupByHash',
      params: { hash: { description: "The group's hash (SHA-256, hex)", schema: { type: 'string', pattern: '^(0[xX])?[0-9a-fA-F]{64}$' } } },
      responses: { 200: { description: 'The group', schema: ref('Group') } },
      errors: ['INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const hash = parseHash(ctx.params.hash, 'group hash')
      const g = s.query.groups.get(ns, hash)
      if (!g) throw new ParleyError('NOT_FOUND', `group ${hash} not found in namespace ${ns} on this member (a member knows only the groups it is in)`)
      sendJson(ctx, 200, presentGroup(g))
    },
  )
}

/** FireFly's Group JSON: `{namespace, name, members: [{identity, node}], localNamespace, message?, hash, created}`. */
export function presentGroup(g: Group): { [key: string]: GoJsonValue } {
  return {
    namespace: g.namespace,
    name: g.name,
    members: g.members.map((m) => ({ identity: m.identity, node: m.node })),
    localNamespace: g.namespace,
    ...(g.message ? { message: g.message } : {}),
    hash: g.hash,
    created: g.created,
  }
}
