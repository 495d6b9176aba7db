import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import type { RouteDocCommon } from '../route-doc.js'
import { ref } from '../openapi/schemas.js'

/** Where the admin routes live: not namespaced, and not under `/api/v1`, so no application mistakes them for its API. */
export const ADMIN_PREFIX = '/admin/v1'

const CONTROLS = { 200: { description: 'The controls in force', schema: ref('Controls') } } as const
const RULE_ERRORS = ['INVALID_JSON', 'INVALID_FIELD', 'INVALID_ID', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const

/** A control's description: every one is a test control, named in FireFly's style (FireFly has none of these). */
const control = (summary: string, operationId: string, rest: Pick<RouteDocCommon, 'responses' | 'errors'> & Partial<Pick<RouteDocCommon, 'body' | 'description'>>) =>
  ({ summary, tag: 'Test controls', operationId, ...rest }) as const

/**
 * Test controls (node/admin/controls.ts), registered only when the member's config says `admin: true` (the local
 * network's members do); otherwise none of these paths exists. Bodies `{to: "<org name>", message?, batch?}`; every
 * answer but a drop's is the controls in force.
 */
export function adminRoutes(r: ApiRouter<NodeServices>): void {
  const at = (path: string): string => `${ADMIN_PREFIX}${path}`
  const rule = { json: ref('DeliveryRule') }
  r.at('get', at('/controls'), control('The test controls in force', 'getControls', { responses: CONTROLS, errors: [] }), (ctx, s) => sendJson(ctx, 200, s.controls.view()))
  r.at(
    'post',
    at('/exchange/hold'),
    control('Hold private deliveries from this member to an org (of one message or batch)', 'postHoldDeliveries', { body: rule, responses: CONTROLS, errors: RULE_ERRORS }),
    async (ctx, s) => sendJson(ctx, 200, s.controls.holdDeliveries((await readJsonBody(ctx)).value)),
  )
  r.at(
    'post',
    at('/exchange/release'),
    control('Release deliveries held by a rule; they are sent as if never held', 'postReleaseDeliveries', { body: rule, responses: CONTROLS, errors: RULE_ERRORS }),
    async (ctx, s) => sendJson(ctx, 200, s.controls.releaseDeliveries((await readJsonBody(ctx)).value)),
  )
  r.at(
    'post',
    at('/exchange/drop'),
    control('Drop private deliveries to an org for good', 'postDropDeliveries', {
      body: rule,
      responses: { 200: { description: 'What was dropped', schema: ref('DropResult') } },
      errors: RULE_ERRORS,
    }),
    async (ctx, s) => sendJson(ctx, 200, s.controls.dropDeliveries((await readJsonBody(ctx)).value)),
  )
  r.at('post', at('/chain/hold'), control('Stop reading BatchPin logs from the chain', 'postHoldChain', { responses: CONTROLS, errors: [] }), (ctx, s) => sendJson(ctx, 200, s.controls.holdChain()))
  r.at('post', at('/chain/release'), control('Read BatchPin logs again', 'postReleaseChain', { responses: CONTROLS, errors: [] }), (ctx, s) => sendJson(ctx, 200, s.controls.releaseChain()))
  r.at('post', at('/ipfs/hold'), control('Stop downloading batches and blobs from IPFS', 'postHoldIpfs', { responses: CONTROLS, errors: [] }), (ctx, s) => sendJson(ctx, 200, s.controls.holdIpfs()))
  r.at('post', at('/ipfs/release'), control('Download from IPFS again', 'postReleaseIpfs', { responses: CONTROLS, errors: [] }), (ctx, s) => sendJson(ctx, 200, s.controls.releaseIpfs()))
}
