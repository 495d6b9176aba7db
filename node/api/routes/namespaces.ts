import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { parseNamespace } from '../router.js'
import { sendJson } from '../body.js'
import { presentNamespace } from '../present.js'

/**
 * FireFly's `GET /api/v1/namespaces` and `/api/v1/namespaces/{ns}`: these are the namespace collection itself, so
 * they sit at exact paths rather than under a namespace. Any well-formed name answers (any namespace is usable).
 */
export function namespaceRoutes(r: ApiRouter<NodeServices>): void {
  r.at('get', '/api/v1/namespaces', (ctx, s) => sendJson(ctx, 200, s.namespaces.list().map(presentNamespace)))
  r.at('get', '/api/v1/namespaces/:ns', (ctx, s) => sendJson(ctx, 200, presentNamespace(s.namespaces.get(parseNamespace(ctx.params.ns)))))
}
