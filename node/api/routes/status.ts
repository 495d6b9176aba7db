import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson, sendJsonText } from '../body.js'
import { presentMultipartyStatus } from '../present.js'
import { ref } from '../openapi/schemas.js'

export function statusRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/status',
    {
      summary: 'This member: its org and node, the chain, IPFS, its database and storage, and whether it is healthy',
      tag: 'Status',
      operationId: 'getStatus',
      responses: { 200: { description: "The member's status", schema: ref('Status') } },
      errors: [],
    },
    async (ctx, s, ns) => {
      sendJsonText(ctx, await s.status(ns))
    },
  )

  r.get(
    '/status/multiparty',
    {
      summary: "Whether this member's org and node are registered, and the BatchPin contract it follows",
      tag: 'Status',
      operationId: 'getStatusMultiparty',
      responses: { 200: { description: 'The multiparty status', schema: ref('MultipartyStatus') } },
      errors: [],
    },
    async (ctx, s, ns) => sendJson(ctx, 200, presentMultipartyStatus(await s.status(ns))),
  )
}
