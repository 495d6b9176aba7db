import type { Tx } from '../db/database.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { Identity } from '../model/index.js'

/** The identity, its parent, its parent's parent... (a loop in the chain ends it). */
export function ancestry(identities: IdentitiesRepo, identity: Identity, tx?: Tx): Identity[] {
  const chain: Identity[] = []
  for (let i: Identity | undefined = identity; i && !chain.some((c) => c.id === i!.id); i = i.parent ? identities.byId(i.parent, tx) : undefined) chain.push(i)
  return chain
}

/**
 * Why `node` cannot receive for `identity` in a group, or undefined when it can: it must be a node owned by the
 * identity or one of its ancestors (FireFly's `ValidateNodeOwner`). Private messages to the member go to that node,
 * so a pairing with another org's node would hand the member's messages to that org.
 */
export function nodeOwnershipProblem(identities: IdentitiesRepo, identity: Identity, node: Identity, tx?: Tx): string | undefined {
  if (node.type !== 'node') return `${node.did} is not a node`
  if (ancestry(identities, identity, tx).some((i) => i.id === node.parent)) return undefined
  const owner = node.parent ? identities.byId(node.parent, tx)?.did : undefined
  return `${node.did} belongs to ${owner ?? 'no registered org'}, not to ${identity.did}`
}
