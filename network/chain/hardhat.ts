import { resolve } from 'node:path'
import type { HardhatRuntimeEnvironment } from 'hardhat/types/runtime.js'
import type { EIP1193Provider } from 'hardhat/types/provider.js'
import type { JsonRpcServer } from 'hardhat/types/builtin-tasks/node.js'
import { TASK_NODE_CREATE_SERVER } from 'hardhat/builtin-tasks/task-names.js'
import { projectRoot } from '../process.js'

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
 * Importing `hardhat` loads the project's hardhat.config.ts through ts-node as CommonJS; ts-node takes that
 * instruction (`moduleTypes`) from the tsconfig.json it finds from the working directory, so we run from the
 * project root and name the config explicitly (HARDHAT_CONFIG), wherever the process was started from.
 */
export async function loadHardhat(opts: { genesisTimestamp: number; hardfork?: string }): Promise<LoadedHardhat> {
  process.chdir(projectRoot)
  process.env.HARDHAT_CONFIG = resolve(projectRoot, 'hardhat.config.ts')
  const hre = (await import('hardhat')).default
  const net = hre.config.networks.hardhat
  // The provider is created lazily on its first request, from this config: adjust it before any request.
  net.chainId = CHAIN_ID
  net.initialDate = new Date(opts.genesisTimestamp * 1000).toISOString()
  if (opts.hardfork !== undefined) net.hardfork = opts.hardfork
  net.mining = { auto: true, interval: 0, mempool: { order: 'priority' } }
  net.loggingEnabled = false
  return {
    hre,
    provider: hre.network.provider,
    createServer: async (hostname, port, provider) =>
      (await hre.run(TASK_NODE_CREATE_SERVER, { hostname, port, provider })) as JsonRpcServer,
  }
}
