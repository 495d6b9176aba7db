import type { NodeConfig } from './config.js'
import type { Database } from './db/database.js'
import type { Chain } from './chain/index.js'
import { useSmallSigningTables } from './chain/signing-tables.js'
import type { SharedStorage } from './storage/shared-storage.js'
import type { NodeServices } from './services.js'
import { now } from './core/time.js'
import { openStore } from './startup/store.js'
import { initPlugins, type PluginCallbacks } from './startup/plugins.js'
import { initManagers, type Managers } from './startup/managers.js'
import { apiServices } from './startup/services.js'
import { startComponents } from './startup/start.js'

export interface RunningNode {
  api: string
  p2p: string
  services: NodeServices
  chain: Chain
  storage: SharedStorage
  db: Database
  stop(): Promise<void>
}

/**
 * Starts a member node in named phases, as FireFly's orchestrator does:
 *
 * 1. `openStore` (node/startup/store.ts): the database (its journal replayed, its folder locked) and the blob files.
 * 2. `initPlugins` (plugins.ts): the member's identity and its seams to the outside, the chain, shared storage and
 *    the p2p exchange, built but not started.
 * 3. `initManagers` (managers.ts): the capabilities over them (aggregate, fetch, receive, deliver, batch, send,
 *    subscribe), built but not started.
 * 4. `apiServices` (services.ts): what the API serves.
 * 5. `startComponents` (start.ts): everything started in dependency order, the API among the last, then the
 *    member's registration through the chain.
 *
 * Nothing runs before phase 5, so a failure before it only closes the database; a failure in it stops what had
 * started, in reverse, and then closes the database. `stop` does the same for a running node, the database last.
 */
export async function startNode(cfg: NodeConfig, log: (line: string) => void): Promise<RunningNode> {
  const started = now()
  useSmallSigningTables()
  const store = await openStore(cfg, log)
  try {
    // The chain calls back into the aggregator, which exists only once the managers do (before anything starts).
    let managers: Managers | undefined
    const callbacks: PluginCallbacks = { chainEvents: (events, throughBlock) => managers!.chainEvents(events, throughBlock) }
    const plugins = initPlugins(cfg, store, callbacks, log)
    managers = initManagers(cfg, store, plugins, log)
    const services = apiServices(cfg, store, plugins, managers, started)
    const components = await startComponents(cfg, store, plugins, managers, services, log)
    log(`node ${cfg.node} of ${cfg.org} (key ${plugins.self.key}) serving ${components.api}, p2p ${plugins.self.p2pUrl}`)
    return {
      api: components.api,
      p2p: plugins.self.p2pUrl,
      services,
      chain: plugins.chain,
      storage: plugins.storage,
      db: store.db,
      async stop() {
        // Work that waits for a full disk to have room is abandoned (it was never acknowledged), so stopping never
        // waits for space that may not come.
        store.db.stopWaitingForSpace()
        await components.stop()
        await store.db.close()
      },
    }
  } catch (err) {
    await store.db.close()
    throw err
  }
}
