import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { statusRoutes } from './status.js'
import { blockchainEventRoutes } from './blockchain-events.js'
import { messageRoutes } from './messages.js'
import { networkRoutes } from './network.js'
import { eventRoutes } from './events.js'
import { dataRoutes } from './data.js'
import { datatypeRoutes } from './datatypes.js'
import { groupRoutes } from './groups.js'
import { subscriptionRoutes } from './subscriptions.js'
import { namespaceRoutes } from './namespaces.js'
import { identityRoutes } from './identities.js'
import { transactionRoutes } from './transactions.js'

/** Every route group of the API, registered in this order: the server and the fuzz suite's route list share it. */
export const API_ROUTES: readonly ((r: ApiRouter<NodeServices>) => void)[] = [
  statusRoutes,
  blockchainEventRoutes,
  messageRoutes,
  networkRoutes,
  eventRoutes,
  dataRoutes,
  datatypeRoutes,
  groupRoutes,
  subscriptionRoutes,
  namespaceRoutes,
  identityRoutes,
  transactionRoutes,
]
