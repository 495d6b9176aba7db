import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJsonText } from '../body.js'

export function statusRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/status', async (ctx, s, ns) => {
    sendJsonText(ctx, await s.status(ns))
  })
}
