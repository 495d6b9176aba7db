import type { Context } from 'koa'
import type { ApiRouter, Handler } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging, shorten } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentIdentity, presentVerifier } from '../present.js'
import { ParleyError } from '../../core/errors.js'
import { parseHash } from '../../core/ids.js'
import { resolveVerifierRef } from '../../identity/verifiers.js'
import type { Identity } from '../../model/index.js'
import { IDENTITY_FIELDS, VERIFIER_FIELDS } from '../../services.js'
import type { ParamDoc } from '../route-doc.js'
import { listOf, ref } from '../openapi/schemas.js'
import { flag } from '../openapi/params.js'

const IDENTITY_KEY: ParamDoc = { description: 'The identity: its UUID, or its DID with its `/` escaped (`did:firefly:org%2Forg0`)' }
/** FireFly's `identities/{did:did:.+}`: a DID as written, its `/` splitting it in two path segments. */
const DID_PARAMS = {
  method: { description: 'The DID up to its `/`, e.g. `did:firefly:org`' },
  name: { description: 'The rest of the DID, e.g. `org0`' },
} as const
const FETCH_VERIFIERS = { fetchverifiers: flag("Include the identity's verifiers (signing key, peer id)") }

/**
 * FireFly's identities and verifiers: the orgs and nodes confirmed through the chain (the same in every namespace),
 * the keys and peer ids that prove them, and the resolution of a signing key.
 */
export function identityRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/identities',
    {
      summary: 'List the identities (orgs and nodes) confirmed through the chain, oldest first',
      tag: 'Identities',
      operationId: 'getIdentities',
      query: FETCH_VERIFIERS,
      paging: true,
      filters: IDENTITY_FIELDS,
      responses: { 200: { description: 'The identities', schema: listOf('Identity') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    listIdentities(false),
  )

  // Before `identities/{did}` written with its `/` unescaped, which has as many segments.
  r.get(
    '/identities/:iid/verifiers',
    {
      summary: "An identity's verifiers",
      tag: 'Identities',
      operationId: 'getIdentityVerifiers',
      params: { iid: IDENTITY_KEY },
      paging: true,
      filters: VERIFIER_FIELDS,
      responses: { 200: { description: 'The verifiers', schema: listOf('Verifier') } },
      errors: ['NOT_FOUND', 'INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, _ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.networkMap.verifiers({ ...(filter ? { filter } : {}), ...paging }, identity(s, ctx.params.iid ?? '')).map(presentVerifier))
    },
  )

  r.get(
    '/identities/:iid',
    {
      summary: 'An identity by UUID or DID',
      tag: 'Identities',
      operationId: 'getIdentityByID',
      params: { iid: IDENTITY_KEY },
      query: FETCH_VERIFIERS,
      responses: { 200: { description: 'The identity', schema: ref('Identity') } },
      errors: ['NOT_FOUND', 'INVALID_FIELD'],
    },
    (ctx, s, _ns, q) => sendIdentity(ctx, s, identity(s, ctx.params.iid ?? ''), boolParam(q, 'fetchverifiers') ?? false),
  )
  r.get(
    '/identities/:method/:name',
    {
      summary: 'An identity by its DID, as written (`identities/did:firefly:org/org0`)',
      tag: 'Identities',
      operationId: 'getIdentityByDID',
      params: DID_PARAMS,
      query: FETCH_VERIFIERS,
      responses: { 200: { description: 'The identity', schema: ref('Identity') } },
      errors: ['NOT_FOUND', 'INVALID_FIELD'],
    },
    (ctx, s, _ns, q) => sendIdentity(ctx, s, identity(s, didOf(ctx)), boolParam(q, 'fetchverifiers') ?? false),
  )

  // FireFly's older `network/identities` (deprecated there for `identities`): each identity with its verifiers.
  r.get(
    '/network/identities',
    {
      summary: 'List the identities with their verifiers (FireFly deprecates this for `identities`)',
      tag: 'Network',
      operationId: 'getNetworkIdentities',
      paging: true,
      filters: IDENTITY_FIELDS,
      responses: { 200: { description: 'The identities', schema: listOf('Identity') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    listIdentities(true),
  )
  r.get(
    '/network/identities/:did',
    {
      summary: 'An identity with its verifiers, by UUID or escaped DID (FireFly deprecates this for `identities`)',
      tag: 'Network',
      operationId: 'getNetworkIdentityByDID',
      params: { did: IDENTITY_KEY },
      responses: { 200: { description: 'The identity', schema: ref('Identity') } },
      errors: ['NOT_FOUND'],
    },
    (ctx, s) => sendIdentity(ctx, s, identity(s, ctx.params.did ?? ''), true),
  )
  r.get(
    '/network/identities/:method/:name',
    {
      summary: 'An identity with its verifiers, by its DID as written',
      tag: 'Network',
      operationId: 'getNetworkIdentityByDIDPath',
      params: DID_PARAMS,
      responses: { 200: { description: 'The identity', schema: ref('Identity') } },
      errors: ['NOT_FOUND'],
    },
    (ctx, s) => sendIdentity(ctx, s, identity(s, didOf(ctx)), true),
  )

  r.get(
    '/verifiers',
    {
      summary: 'List the verifiers of every identity, oldest first',
      tag: 'Verifiers',
      operationId: 'getVerifiers',
      paging: true,
      filters: VERIFIER_FIELDS,
      responses: { 200: { description: 'The verifiers', schema: listOf('Verifier') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, _ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.networkMap.verifiers({ ...(filter ? { filter } : {}), ...paging }).map(presentVerifier))
    },
  )

  r.get(
    '/verifiers/:hash',
    {
      summary: 'A verifier by its hash',
      tag: 'Verifiers',
      operationId: 'getVerifierByID',
      params: { hash: { description: "The verifier's hash: SHA-256 of its namespace, type and value, hex (`0x` optional)" } },
      responses: { 200: { description: 'The verifier', schema: ref('Verifier') } },
      errors: ['INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s) => {
      const hash = parseHash(ctx.params.hash, 'verifier hash')
      const v = s.networkMap.verifierByHash(hash)
      if (!v) throw new ParleyError('NOT_FOUND', `no verifier with hash ${hash}`)
      sendJson(ctx, 200, presentVerifier(v))
    },
  )

  r.post(
    '/verifiers/resolve',
    {
      summary: 'Resolve a signing key: its verifier type and its normal form',
      description: 'An Ethereum address in any case, with or without `0x`, is answered lowercase with `0x`. Whether a member holds the key is not asked, as in FireFly.',
      tag: 'Verifiers',
      operationId: 'postVerifiersResolve',
      body: { json: ref('VerifierRef') },
      responses: { 200: { description: 'The key resolved', schema: ref('VerifierRef') } },
      errors: ['INVALID_JSON', 'INVALID_FIELD', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE', 'TOO_MANY_REQUESTS', 'REQUEST_TIMEOUT'],
    },
    async (ctx) => {
      const resolved = resolveVerifierRef(await readJsonBody(ctx))
      sendJson(ctx, 200, { type: resolved.type, value: resolved.value })
    },
  )
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

function sendIdentity(ctx: Context, s: NodeServices, i: Identity, withVerifiers: boolean): void {
  sendJson(ctx, 200, presentIdentity(i, withVerifiers ? s.networkMap.verifiersOf(i) : undefined))
}

/** A page of identities, each with its verifiers when `always` or when asked (`fetchverifiers`). */
function listIdentities(always: boolean): Handler<NodeServices> {
  return (ctx, s, _ns, q) => {
    const paging = parsePaging(q)
    const withVerifiers = always || (boolParam(q, 'fetchverifiers') ?? false)
    const filter = parseFilter(q)
    sendJson(ctx, 200, s.networkMap.list({ ...(filter ? { filter } : {}), ...paging }, withVerifiers).map((e) => presentIdentity(e.identity, e.verifiers)))
  }
}
