import type { NodeConfig } from '../config.js'
import { startApiServer, type ApiServer } from '../api/server.js'
import { accessPolicy } from '../api/access.js'
import { ensureAdminToken } from '../admin/token.js'
import { errorMessage } from '../core/errors.js'
import { startAll, type Component } from '../core/lifecycle.js'
import { registerSelf } from '../definitions/registration.js'
import type { NodeServices } from '../services.js'
import type { NodeStore } from './store.js'
import type { Plugins } from './plugins.js'
import type { Managers } from './managers.js'
import { quotaSweep } from './quota-sweep.js'

export interface StartedComponents {
  /** The API's URL, once it listens. */
  api: string
  /** Stops every component in reverse order of start, each waiting for its work in flight. */
  stop(): Promise<void>
}

/**
 * Start-up phase 5: starts the plugins, managers and API in dependency order, then the member's registration through
 * the chain (if it has not registered yet). If one fails to start, those already started are stopped in reverse
 * order before the failure is thrown. The database is not among them: it is the caller's, closed last.
 */
export async function startComponents(cfg: NodeConfig, store: NodeStore, plugins: Plugins, managers: Managers, services: NodeServices, log: (line: string) => void): Promise<StartedComponents> {
  const { db, gate, repos } = store
  const { self, storage, chain, exchange, peers } = plugins
  const { eventStreams, validator, aggregator, batchFetcher, blobFetcher, deliveryQueue, batchManager, eventSockets, sender } = managers

  // Reads the size now and then, so that crossing the warning share or the ceiling is logged even with no sends.
  let capacityWatch: NodeJS.Timeout | undefined
  let api: ApiServer | undefined
  let registration: Promise<void> = Promise.resolve()
  const registrationStop = new AbortController()
  const components: Component[] = [
    { name: 'shared storage', start: () => storage.start(), stop: () => storage.stop() },
    {
      name: 'capacity watch',
      start: () => {
        capacityWatch = setInterval(() => gate.status(), 60_000)
        capacityWatch.unref()
      },
      stop: async () => clearInterval(capacityWatch),
    },
    { name: 'event streams', start: () => {}, stop: () => eventStreams.stop() },
    // Stops after the aggregator and the API, which may wait on its checks.
    { name: 'validation worker', start: () => {}, stop: () => validator.stop() },
    aggregator,
    batchFetcher,
    blobFetcher,
    // Expired blobs no message refers to, and private batches never pinned (the start-up sweep did blobs once already).
    quotaSweep([() => store.unreferencedBlobs.sweep(), () => managers.unpinnedExpiry.sweep()], cfg.quotas.sweepIntervalMs, log),
    { name: 'chain', start: () => chain.start(), stop: () => chain.stop() },
    // Started after the chain so that it stops before it: the pin submission it waits on is abandoned by its own
    // signal rather than cut off by the chain going away.
    {
      name: 'p2p exchange',
      start: async () => {
        peers.trust()
        await exchange.start()
      },
      stop: () => exchange.stop(),
    },
    // After the exchange (it sends through it) and before the batch manager (whose private dispatches wait on it).
    deliveryQueue,
    batchManager,
    {
      name: 'api',
      start: async () => {
        api = await startApiServer({
          host: cfg.api.host,
          port: cfg.api.port,
          services,
          log,
          onUpgrade: (req, socket, head) => eventSockets.handleUpgrade(req, socket, head),
          access: accessPolicy(cfg.api),
          ...(cfg.admin ? { adminToken: ensureAdminToken(cfg.dataDir) } : {}),
        })
      },
      stop: async () => api?.close(),
    },
    // Listed after the API so that it stops first: its sockets close before the server waits for its connections.
    { name: 'event sockets', start: () => eventSockets.start(), stop: () => eventSockets.stop() },
    {
      name: 'registration',
      start: () => {
        // It retries each failed step itself; the catch is for a bug, so that it is a log line and not a crash.
        const profile = { id: `${cfg.org}/${cfg.node}`, endpoint: self.p2pUrl, cert: self.cert }
        registration = registerSelf({ db, identities: repos.identities, state: repos.state, sender, self: self.identity, profile, log, signal: registrationStop.signal }).catch((err: unknown) =>
          log(`identity: registration failed: ${errorMessage(err)}`),
        )
      },
      stop: () => {
        registrationStop.abort()
        return registration
      },
    },
  ]
  const stop = await startAll(components, log)
  return { api: api!.url, stop }
}
