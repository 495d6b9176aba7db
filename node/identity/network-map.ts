import { isUuid, type Hash } from '../core/ids.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { CollectionQuery, Identity, Verifier } from '../model/index.js'
import { namespacedVerifier, type NamespacedVerifier } from './verifiers.js'

/**
 * FireFly's network map, read-only: the orgs and nodes confirmed through the chain and the verifiers that prove them.
 * They are the same in every namespace (they are defined in `svc_system`), so no read here takes one.
 */
export class NetworkMap {
  constructor(private readonly identities: IdentitiesRepo) {}

  /** Every identity, oldest first, each with its verifiers when asked. */
  list(q: CollectionQuery, withVerifiers: boolean): { identity: Identity; verifiers?: Verifier[] }[] {
    return this.identities.list(undefined, q).map((identity) => (withVerifiers ? { identity, verifiers: this.identities.verifiersOf(identity.id) } : { identity }))
  }

  /** An identity by its UUID (any case) or its full DID. */
  find(key: string): Identity | undefined {
    if (isUuid(key)) return this.identities.byId(key.toLowerCase())
    return key.startsWith('did:') ? this.identities.byDid(key) : undefined
  }

  verifiersOf(identity: Identity): Verifier[] {
    return this.identities.verifiersOf(identity.id)
  }

  /** The verifiers of one identity, or of all, filtered and paged, in FireFly's shape. */
  verifiers(q: CollectionQuery, of?: Identity): NamespacedVerifier[] {
    const page = this.identities.verifiers(q, of?.id)
    const owners = of ? new Map([[of.id as string, of]]) : this.identities.byIds([...new Set(page.map((v) => v.identity))])
    return page.flatMap((v) => {
      const owner = owners.get(v.identity)
      return owner ? [namespacedVerifier(v, owner)] : []
    })
  }

  /** The verifier with this hash (see verifierHash): computed for each, as there are one or two per member. */
  verifierByHash(hash: Hash): NamespacedVerifier | undefined {
    const all = this.identities.allVerifiers()
    const owners = this.identities.byIds([...new Set(all.map((v) => v.identity))])
    for (const v of all) {
      const owner = owners.get(v.identity)
      if (!owner) continue
      const nv = namespacedVerifier(v, owner)
      if (nv.hash === hash) return nv
    }
    return undefined
  }
}
