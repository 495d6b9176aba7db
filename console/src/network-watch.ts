import { effect } from '@preact/signals'
import { apiGet, apiGetList, errorText, nsPath } from './api'
import { onEvent } from './events'
import { nodes, ns, orgs, status, statusError } from './state'
import type { Identity, NodeStatus } from './types'

/** How often the member's status is read while nothing happens (chain head moves without events here). */
const STATUS_EVERY_MS = 3_000

/**
 * Keeps the shared picture of this member and the network fresh: `GET /status` on a timer and after chain events,
 * the registered orgs and nodes at start and after every identity_confirmed.
 */
export function startNetworkWatch(): void {
  let pending: ReturnType<typeof setTimeout> | undefined
  const readStatus = async (): Promise<void> => {
    try {
      status.value = await apiGet<NodeStatus>(nsPath('/status'))
      statusError.value = undefined
    } catch (err) {
      statusError.value = errorText(err)
    }
  }
  const readNetwork = async (): Promise<void> => {
    try {
      // fetchverifiers: an org's keys, to tell which member pinned a batch seen on the chain.
      const [o, n] = await Promise.all([
        apiGetList<Identity>('/api/v1/network/organizations', { fetchverifiers: true, limit: 200 }),
        apiGetList<Identity>('/api/v1/network/nodes', { limit: 200 }),
      ])
      orgs.value = [...o].sort((a, b) => a.name.localeCompare(b.name))
      nodes.value = n
    } catch {
      // The status read reports an unreachable node; the picture keeps what it had.
    }
  }
  effect(() => {
    void ns.value
    void readStatus()
  })
  void readNetwork()
  setInterval(() => void readStatus(), STATUS_EVERY_MS)
  onEvent((e) => {
    if (e.type === 'identity_confirmed') void readNetwork()
    if ((e.type === 'blockchain_event_received' || e.type === 'identity_confirmed') && pending === undefined) {
      pending = setTimeout(() => {
        pending = undefined
        void readStatus()
      }, 300)
    }
  }, { chain: true })
}
