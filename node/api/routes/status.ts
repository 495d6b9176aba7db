import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJsonText } from '../body.js'
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
}
