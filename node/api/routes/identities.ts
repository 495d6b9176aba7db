import type { ParsedUrlQuery } from 'node:querystring'
import type { Context } from 'koa'
import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging, shorten } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentIdentity, presentVerifier } from '../present.js'
import { ParleyError } from '../../core/errors.js'
import { parseHash } from '../../core/ids.js'
import { resolveVerifierRef } from '../../identity/verifiers.js'
import type { Identity } from '../../model/index.js'

/**
 * FireFly's identities and verifiers: the orgs and nodes confirmed through the chain (the same in every namespace),
 * the keys and peer ids that prove them, and the resolution of a signing key.
 */
export function identityRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/identities', (ctx, s, _ns, q) => {
    const paging = parsePaging(q)
    const withVerifiers = boolParam(q, 'fetchverifiers') ?? false
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.networkMap.list({ ...(filter ? { filter } : {}), ...paging }, withVerifiers).map((e) => presentIdentity(e.identity, e.verifiers)))
  })

  // Before `identities/{did}` written with its `/` unescaped, which has as many segments.
  r.get('/identities/:iid/verifiers', (ctx, s, _ns, q) => {
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.networkMap.verifiers({ ...(filter ? { filter } : {}), ...paging }, identity(s, ctx.params.iid ?? '')).map(presentVerifier))
  })

  // By UUID, or by DID with its `/` escaped (`did:firefly:org%2Forg0`).
  r.get('/identities/:iid', (ctx, s, _ns, q) => sendIdentity(ctx, s, identity(s, ctx.params.iid ?? ''), q))
  // FireFly's `identities/{did:did:.+}`: a DID as it is written, `did:firefly:org/org0`.
  r.get('/identities/:method/:name', (ctx, s, _ns, q) => sendIdentity(ctx, s, identity(s, didOf(ctx)), q))

  // FireFly's older `network/identities` (deprecated there for `identities`): each identity with its verifiers.
  r.get('/network/identities', (ctx, s, _ns, q) => {
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.networkMap.list({ ...(filter ? { filter } : {}), ...paging }, true).map((e) => presentIdentity(e.identity, e.verifiers)))
  })
  r.get('/network/identities/:did', (ctx, s) => {
    const i = identity(s, ctx.params.did ?? '')
    sendJson(ctx, 200, presentIdentity(i, s.networkMap.verifiersOf(i)))
  })
  r.get('/network/identities/:method/:name', (ctx, s) => {
    const i = identity(s, didOf(ctx))
    sendJson(ctx, 200, presentIdentity(i, s.networkMap.verifiersOf(i)))
  })

  r.get('/verifiers', (ctx, s, _ns, q) => {
    const paging = parsePaging(q)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.networkMap.verifiers({ ...(filter ? { filter } : {}), ...paging }).map(presentVerifier))
  })

  r.get('/verifiers/:hash', (ctx, s) => {
    const hash = parseHash(ctx.params.hash, 'verifier hash')
    const v = s.networkMap.verifierByHash(hash)
    if (!v) throw new ParleyError('NOT_FOUND', `no verifier with hash ${hash}`)
    sendJson(ctx, 200, presentVerifier(v))
  })

  r.post('/verifiers/resolve', async (ctx) => {
    const ref = resolveVerifierRef(await readJsonBody(ctx))
    sendJson(ctx, 200, { type: ref.type, value: ref.value })
  })
}

/** A DID written with its `/` in the path (`did:firefly:org/org0`): two segments, the first starting `did:`. */
function didOf(ctx: Context): string {
  const method = ctx.params.method ?? ''
  if (!method.startsWith('did:')) throw new ParleyError('NOT_FOUND', `no route for ${ctx.method} ${shorten(ctx.path)}`)
  return `${method}/${ctx.params.name ?? ''}`
}

function identity(s: NodeServices, key: string): Identity {
  const i = s.networkMap.find(key)
  if (!i) throw new ParleyError('NOT_FOUND', `no identity ${JSON.stringify(shorten(key))} (give its UUID or its DID)`)
  return i
}

function sendIdentity(ctx: Context, s: NodeServices, i: Identity, q: ParsedUrlQuery): void {
  const withVerifiers = boolParam(q, 'fetchverifiers') ?? false
  sendJson(ctx, 200, presentIdentity(i, withVerifiers ? s.networkMap.verifiersOf(i) : undefined))
}
