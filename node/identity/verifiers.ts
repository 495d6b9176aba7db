import { ParleyError } from '../core/errors.js'
import { sha256Hex } from '../core/hashes.js'
import type { Hash, IdentityId } from '../core/ids.js'
import { optString } from '../core/input.js'
import type { JsonNode } from '../core/json.js'
import type { Timestamp } from '../core/time.js'
import type { Identity, Verifier, VerifierType } from '../model/index.js'

/** FireFly's Verifier: a verifier with the identity it proves and the hash every member computes alike for it. */
export interface NamespacedVerifier {
  hash: Hash
  identity: IdentityId
  namespace: string
  type: VerifierType
  value: string
  created: Timestamp
}

/**
 * FireFly's `Verifier.Seal`: sha256 of the namespace, type and value, so that every member names a verifier alike. A
 * verifier belongs to its identity's namespace (the network's identities live in `svc_system`).
 */
export function verifierHash(namespace: string, type: string, value: string): Hash {
  return sha256Hex(namespace, type, value)
}

/** A stored verifier in FireFly's shape, in the namespace of the identity it proves. */
export function namespacedVerifier(v: Verifier, owner: Pick<Identity, 'namespace'>): NamespacedVerifier {
  return { hash: verifierHash(owner.namespace, v.type, v.value), identity: v.identity, namespace: owner.namespace, type: v.type, value: v.value, created: v.created }
}

/** The verifier type the chain this node signs on uses: members sign pins with Ethereum addresses. */
export const SIGNING_VERIFIER_TYPE: VerifierType = 'ethereum_address'

const ADDRESS = /^(?:0x)?([0-9a-fA-F]{40})$/

/**
 * FireFly's `verifiers/resolve` with a lookup intent: `{type?, value}` where the type, when given, must be the chain's
 * (`ethereum_address`), and the value an Ethereum address, with or without `0x`, in any case. Answers it as the node
 * stores and compares keys (lowercase, `0x`). Whether the key belongs to a member is not asked: FireFly resolves the
 * key without looking it up either.
 */
export function resolveVerifierRef(body: JsonNode): { type: VerifierType; value: string } {
  if (body.kind !== 'object') throw new ParleyError('INVALID_FIELD', 'the request body must be a JSON object {type?, value}')
  const type = optString(body.get('type'), 'type') ?? ''
  if (type !== '' && type !== SIGNING_VERIFIER_TYPE) {
    throw new ParleyError('INVALID_FIELD', `unknown verifier type ${JSON.stringify(type)}: this network signs with ${SIGNING_VERIFIER_TYPE}`)
  }
  const value = optString(body.get('value'), 'value')
  if (value === undefined || value === '') throw new ParleyError('INVALID_FIELD', 'value is required: the signing key to resolve')
  const m = ADDRESS.exec(value)
  if (!m) throw new ParleyError('INVALID_FIELD', `value is not an Ethereum address: ${JSON.stringify(value.slice(0, 100))}`)
  return { type: SIGNING_VERIFIER_TYPE, value: `0x${m[1]!.toLowerCase()}` }
}
