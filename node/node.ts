import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import type { NodeConfig } from './config.js'
import { Database } from './db/database.js'
import { migrations } from './db/schema/index.js'
import { NodeStateRepo } from './db/repos/node-state.js'
import { BlockchainEventsRepo } from './db/repos/blockchain-events.js'
import { createChain } from './chain/index.js'
import type { Chain } from './chain/types.js'
import { createIpfsStorage } from './storage/ipfs.js'
import type { SharedStorage } from './storage/shared-storage.js'
import { startApiServer, type ApiServer } from './api/server.js'
import { startP2pServer, type P2pServer } from './exchange/p2p-server.js'
import type { NodeServices, NodeStatus } from './services.js'
import { now } from './core/time.js'
import { VERSION } from './version.js'

export interface RunningNode {
  api: string
  p2p: string
  services: NodeServices
  chain: Chain
  storage: SharedStorage
  db: Database
  stop(): Promise<void>
}

/** Opens the node's database, connects its seams (chain, storage, p2p) and serves its API. */
export async function startNode(cfg: NodeConfig, log: (line: string) => void): Promise<RunningNode> {
  const started = now()
  const db = await Database.open({ dir: join(cfg.dataDir, 'db'), migrations })
  const state = new NodeStateRepo(db)
  const blockchainEvents = new BlockchainEventsRepo(db)
  const key = new Wallet(cfg.signingKey).address.toLowerCase()

  const chain = createChain({
    rpc: cfg.chain.rpc,
    contract: cfg.chain.contract,
    privateKey: cfg.signingKey,
    fromBlock: state.chainCursor() ?? cfg.chain.firstBlock,
    log,
    // The events and the cursor move together, so a crash re-reads a range at worst, never skips one.
    onEvents: async (events, throughBlock) => {
      const received = now()
      await db.transaction((tx) => {
        for (const ev of events) blockchainEvents.insert(tx, ev, received)
        state.setChainCursor(tx, throughBlock + 1)
      })
    },
  })
  const storage = createIpfsStorage({ api: cfg.ipfs.api, gateway: cfg.ipfs.gateway, log })

  const services: NodeServices = {
    config: cfg,
    version: VERSION,
    blockchainEvents,
    async status(ns): Promise<NodeStatus> {
      const cursor = state.chainCursor() ?? cfg.chain.firstBlock
      return {
        namespace: { name: ns, networkName: ns },
        org: { name: cfg.org, did: `did:firefly:org/${cfg.org}`, key, registered: false },
        node: { name: cfg.node, registered: false, p2p: `https://${cfg.p2p.host}:${cfg.p2p.port}` },
        chain: { ...chain.status(), lastProcessedBlock: cursor - 1 },
        ipfs: await storage.probe(),
        multiparty: { enabled: true, contract: { active: { index: 0, location: { address: cfg.chain.contract }, firstEvent: cfg.chain.firstBlock } } },
        version: VERSION,
        started,
      }
    },
  }

  let api: ApiServer | undefined
  let p2p: P2pServer | undefined
  try {
    api = await startApiServer({ host: cfg.api.host, port: cfg.api.port, services, log })
    p2p = await startP2pServer({
      host: cfg.p2p.host,
      port: cfg.p2p.port,
      cert: readFileSync(cfg.p2p.cert, 'utf8'),
      key: readFileSync(cfg.p2p.key, 'utf8'),
    })
  } catch (err) {
    await api?.close()
    await db.close()
    throw err
  }
  chain.start()
  storage.start()
  log(`node ${cfg.node} of ${cfg.org} (key ${key}) serving ${api.url}, p2p ${p2p.url}`)

  const a = api
  const p = p2p
  return {
    api: a.url,
    p2p: p.url,
    services,
    chain,
    storage,
    db,
    async stop() {
      await a.close()
      await p.close()
      await chain.stop()
      await storage.stop()
      await db.close()
    },
  }
}
