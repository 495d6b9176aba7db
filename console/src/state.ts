import { computed, signal } from '@preact/signals'
import { DEFAULT_NAMESPACE, parseHash, type Route } from './router'
import type { Identity, NodeStatus } from './types'

/** State shared across views; each view keeps its own lists. */

export const route = signal<Route>(parseHash(location.hash))
addEventListener('hashchange', () => {
  route.value = parseHash(location.hash)
})

export const ns = computed(() => route.value.query.get('ns') || DEFAULT_NAMESPACE)

export type SocketState = 'connecting' | 'open' | 'closed'
export const socketState = signal<SocketState>('connecting')

/** `GET /status`, refreshed by the app shell; undefined until the first answer. */
export const status = signal<NodeStatus | undefined>(undefined)
export const statusError = signal<string | undefined>(undefined)

/** The registered orgs and nodes (the network map), refreshed on identity events. */
export const orgs = signal<Identity[]>([])
export const nodes = signal<Identity[]>([])

/** An org's name from a DID (`did:firefly:org/<name>`), the form messages and groups name authors in. */
export function orgName(did: string): string {
  return did.startsWith('did:firefly:org/') ? did.slice('did:firefly:org/'.length) : did
}
