import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { parseNamespace } from '../router.js'
import { sendJson } from '../body.js'
import { presentNamespace } from '../present.js'
import { listOf, ref } from '../openapi/schemas.js'

/**
 * FireFly's `GET /api/v1/namespaces` and `/api/v1/namespaces/{ns}`: these are the namespace collection itself, so
 * they sit at exact paths rather than under a namespace. Any well-formed name answers (any namespace is usable).
 */
export function namespaceRoutes(r: ApiRouter<NodeServices>): void {
  r.at(
    'get',
    '/api/v1/namespaces',
    {
      summary: 'List the namespaces: `default` and every one that holds something on this member',
      tag: 'Namespaces',
      operationId: 'getNamespaces',
      responses: { 200: { description: 'The namespaces, by name', schema: listOf('Namespace') } },
      errors: [],
    },
    (ctx, s) => sendJson(ctx, 200, s.namespaces.list().map(presentNamespace)),
  )
  r.at(
    'get',
    '/api/v1/namespaces/:ns',
    {
      summary: 'A namespace by name (any name is usable)',
      tag: 'Namespaces',
      operationId: 'getNamespace',
      params: { ns: { description: 'The namespace name' } },
      responses: { 200: { description: 'The namespace', schema: ref('Namespace') } },
      errors: ['INVALID_FIELD'],
    },
    (ctx, s) => sendJson(ctx, 200, presentNamespace(s.namespaces.get(parseNamespace(ctx.params.ns)))),
  )
}
