import type { ApiRouter, GlobalHandler } from '../router.js'
import { ParleyError } from '../../core/errors.js'
import { ADMIN_TOKEN_FILE, bearerMatches } from '../../admin/token.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import type { RouteDocCommon } from '../route-doc.js'
import { ref } from '../openapi/schemas.js'

/** Where the admin routes live: not namespaced, and not under `/api/v1`, so no application mistakes them for its API. */
export const ADMIN_PREFIX = '/admin/v1'

const CONTROLS = { 200: { description: 'The controls in force', schema: ref('Controls') } } as const
const RULE_ERRORS = ['UNAUTHORIZED', 'INVALID_JSON', 'INVALID_FIELD', 'INVALID_ID', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const
const NO_BODY_ERRORS = ['UNAUTHORIZED'] as const

/** A control's description: every one is a test control, named in FireFly's style (FireFly has none of these). */
const control = (summary: string, operationId: string, rest: Pick<RouteDocCommon, 'responses' | 'errors'> & Partial<Pick<RouteDocCommon, 'body' | 'description'>>) =>
  ({ summary, tag: 'Test controls', operationId, ...rest }) as const

/**
 * Test controls (node/admin/controls.ts), registered only when the member's config says `admin: true` (the local
 * network's members do); otherwise none of these paths exists. Each asks for the member's admin token
 * (node/admin/token.ts) before it reads anything: 401 without it. Bodies `{to: "<org name>", message?, batch?}`;
 * every answer but a drop's is the controls in force.
 */
export function adminRoutes(r: ApiRouter<NodeServices>, token: string): void {
  const at = (path: string): string => `${ADMIN_PREFIX}${path}`
  const guard =
    (handler: GlobalHandler<NodeServices>): GlobalHandler<NodeServices> =>
    (ctx, s, query) => {
      if (!bearerMatches(ctx.get('authorization') || undefined, token)) {
        ctx.set('WWW-Authenticate', 'Bearer realm="parley-admin"')
        throw new ParleyError('UNAUTHORIZED', `the test controls need this member's admin token as "Authorization: Bearer <token>"; it is in the file ${ADMIN_TOKEN_FILE} of the member's data folder`)
      }
      return handler(ctx, s, query)
    }
  const rule = { json: ref('DeliveryRule') }
  r.at('get', at('/controls'), control('The test controls in force', 'getControls', { responses: CONTROLS, errors: NO_BODY_ERRORS }), guard((ctx, s) => sendJson(ctx, 200, s.controls.view())))
  r.at(
    'post',
    at('/exchange/hold'),
    control('Hold private deliveries from this member to an org (of one message or batch)', 'postHoldDeliveries', { body: rule, responses: CONTROLS, errors: RULE_ERRORS }),
    guard(async (ctx, s) => sendJson(ctx, 200, s.controls.holdDeliveries((await readJsonBody(ctx)).value))),
  )
  r.at(
    'post',
    at('/exchange/release'),
    control('Release deliveries held by a rule; they are sent as if never held', 'postReleaseDeliveries', { body: rule, responses: CONTROLS, errors: RULE_ERRORS }),
    guard(async (ctx, s) => sendJson(ctx, 200, s.controls.releaseDeliveries((await readJsonBody(ctx)).value))),
  )
  r.at(
    'post',
    at('/exchange/drop'),
    control('Drop private deliveries to an org for good', 'postDropDeliveries', {
      body: rule,
      responses: { 200: { description: 'What was dropped', schema: ref('DropResult') } },
      errors: RULE_ERRORS,
    }),
    guard(async (ctx, s) => sendJson(ctx, 200, s.controls.dropDeliveries((await readJsonBody(ctx)).value))),
  )
  r.at('post', at('/chain/hold'), control('Stop reading BatchPin logs from the chain', 'postHoldChain', { responses: CONTROLS, errors: NO_BODY_ERRORS }), guard((ctx, s) => sendJson(ctx, 200, s.controls.holdChain())))
  r.at('post', at('/chain/release'), control('Read BatchPin logs again', 'postReleaseChain', { responses: CONTROLS, errors: NO_BODY_ERRORS }), guard((ctx, s) => sendJson(ctx, 200, s.controls.releaseChain())))
  r.at('post', at('/ipfs/hold'), control('Stop downloading batches and blobs from IPFS', 'postHoldIpfs', { responses: CONTROLS, errors: NO_BODY_ERRORS }), guard((ctx, s) => sendJson(ctx, 200, s.controls.holdIpfs())))
  r.at('post', at('/ipfs/release'), control('Download from IPFS again', 'postReleaseIpfs', { responses: CONTROLS, errors: NO_BODY_ERRORS }), guard((ctx, s) => sendJson(ctx, 200, s.controls.releaseIpfs())))
}
