import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'

export function statusRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/status', async (ctx, s, ns) => {
    ctx.body = await s.status(ns)
  })
}
