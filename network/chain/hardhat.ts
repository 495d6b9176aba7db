import { resolve } from 'node:path'
import type { HardhatRuntimeEnvironment } from 'hardhat/types/runtime.js'
import type { EIP1193Provider } from 'hardhat/types/provider.js'
import type { JsonRpcServer } from 'hardhat/types/builtin-tasks/node.js'
import { TASK_NODE_CREATE_SERVER } from 'hardhat/builtin-tasks/task-names.js'
import { projectRoot } from '../process.js'
import { deriveHdPrivateKeys } from './hd-accounts.js'

export const CHAIN_ID = 31337

export interface LoadedHardhat {
  hre: HardhatRuntimeEnvironment
  provider: EIP1193Provider
  /** Hardhat's own HTTP + WebSocket JSON-RPC server (what `hardhat node` serves), over `provider`. */
  createServer(hostname: string, port: number, provider: EIP1193Provider): Promise<JsonRpcServer>
}

/**
 * Loads Hardhat as a library with an in-memory network whose genesis is fixed by `genesisTimestamp` and
 * `hardfork`, so that every start on the same state folder begins from the identical genesis block.
 *
 * Importing `hardhat` loads the config named by HARDHAT_CONFIG (Hardhat as a library never registers ts-node
 * itself). The network starts the chain with `configFile` set to the compiled `.build/<id>/hardhat.config.cjs`
 * (network/build.ts), which plain Node loads. Without it, the project's hardhat.config.ts is loaded, which needs
 * a TypeScript loader in the process (`node --import tsx`, whose require hook compiles it). Either way we run
 * from the project root and name the config explicitly, wherever the process was started from.
 */
export async function loadHardhat(opts: { genesisTimestamp: number; hardfork?: string; configFile?: string }): Promise<LoadedHardhat> {
  process.chdir(projectRoot)
  process.env.HARDHAT_CONFIG = resolve(projectRoot, opts.configFile ?? 'hardhat.config.ts')
  const hre = (await import('hardhat')).default
  const net = hre.config.networks.hardhat
  // The provider is created lazily on its first request, from this config: adjust it before any request.
  net.chainId = CHAIN_ID
  net.initialDate = new Date(opts.genesisTimestamp * 1000).toISOString()
  if (opts.hardfork !== undefined) net.hardfork = opts.hardfork
  net.mining = { auto: true, interval: 0, mempool: { order: 'priority' } }
  net.loggingEnabled = false
  // The same genesis accounts as the HD config names, derived natively (see hd-accounts.ts): Hardhat would spend
  // about half a second deriving them in JavaScript. Same keys, same balances, so the same genesis block.
  if (!Array.isArray(net.accounts)) {
    const hd = net.accounts
    const keys = deriveHdPrivateKeys(hd)
    if (keys !== undefined) net.accounts = keys.map((privateKey) => ({ privateKey, balance: hd.accountsBalance }))
  }
  return {
    hre,
    provider: hre.network.provider,
    createServer: async (hostname, port, provider) =>
      (await hre.run(TASK_NODE_CREATE_SERVER, { hostname, port, provider })) as JsonRpcServer,
  }
}
