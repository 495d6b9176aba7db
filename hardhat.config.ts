import { subtask } from 'hardhat/config.js'
import { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } from 'hardhat/builtin-tasks/task-names.js'
import '@nomicfoundation/hardhat-ethers'
import type { HardhatUserConfig } from 'hardhat/types/index.js'

const SOLC_VERSION = '0.8.28'

subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args: { solcVersion: string }, _hre, runSuper) => {
  if (args.solcVersion !== SOLC_VERSION) return runSuper()
  return {
    compilerPath: require.resolve('solc/soljson.js'),
    isSolcJs: true,
    version: SOLC_VERSION,
    longVersion: require('solc/package.json').version,
  }
})

const config: HardhatUserConfig = {
  solidity: { version: SOLC_VERSION, settings: { optimizer: { enabled: true, runs: 200 } } },
  paths: { sources: './contracts', tests: './test/contract', cache: './cache', artifacts: './artifacts' },
}
export default config
