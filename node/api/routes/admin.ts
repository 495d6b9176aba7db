import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'

/** Where the admin routes live: not namespaced, and not under `/api/v1`, so no application mistakes them for its API. */
export const ADMIN_PREFIX = '/admin/v1'

/**
 * Test controls (node/admin/controls.ts), registered only when the member's config says `admin: true` (the local
 * network's members do); otherwise none of these paths exists. Bodies `{to: "<org name>", message?, batch?}`; every
 * answer but a drop's is the controls in force.
 */
export function adminRoutes(r: ApiRouter<NodeServices>): void {
  const at = (path: string): string => `${ADMIN_PREFIX}${path}`
  r.at('get', at('/controls'), (ctx, s) => sendJson(ctx, 200, s.controls.view()))
  r.at('post', at('/exchange/hold'), async (ctx, s) => sendJson(ctx, 200, s.controls.holdDeliveries((await readJsonBody(ctx)).value)))
  r.at('post', at('/exchange/release'), async (ctx, s) => sendJson(ctx, 200, s.controls.releaseDeliveries((await readJsonBody(ctx)).value)))
  r.at('post', at('/exchange/drop'), async (ctx, s) => sendJson(ctx, 200, s.controls.dropDeliveries((await readJsonBody(ctx)).value)))
  r.at('post', at('/chain/hold'), (ctx, s) => sendJson(ctx, 200, s.controls.holdChain()))
  r.at('post', at('/chain/release'), (ctx, s) => sendJson(ctx, 200, s.controls.releaseChain()))
  r.at('post', at('/ipfs/hold'), (ctx, s) => sendJson(ctx, 200, s.controls.holdIpfs()))
  r.at('post', at('/ipfs/release'), (ctx, s) => sendJson(ctx, 200, s.controls.releaseIpfs()))
}
