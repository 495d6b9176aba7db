/**
 * What a chain of any kind needs before members of their own hosts use it (`npm run chain -- deploy|fund`,
 * network/hosts/chain-command.ts): BatchPin deployed, and each member's signing account funded. Without --key-file, the deployment and funding are paid by Hardhat's account #0, whose key is public: on the
 * local chain (chain id 31337) only.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { isAddress } from 'ethers'
import { JsonRpcClient } from '../../node/chain/rpc.js'
import { deployBatchPin, fundAccounts } from '../chain/deploy.js'
import { FUNDING_ETHER } from '../startup/contract.js'

const LOCAL_CHAIN_ID = 31337

export const CHAIN_USAGE = `usage:
  npm run chain -- --config FILE                     run the local chain ({"host", "port", "dir"})
  npm run chain -- deploy --rpc URL [--key-file F]   deploy BatchPin; prints rpc, chainId, contract and firstBlock
  npm run chain -- fund --rpc URL --to ADDRESS[,ADDRESS...] [--ether N] [--key-file F]
                                                     send N ETH (default ${FUNDING_ETHER}) to each member's signing address
  --key-file F   a file holding the 0x-prefixed private key that pays; required on any chain but the local one (31337)
`

export type ChainVerb = { verb: 'deploy'; rpc: string; keyFile?: string } | { verb: 'fund'; rpc: string; to: string[]; ether: string; keyFile?: string }

/** The arguments of `deploy` or `fund`, checked; a string says what is wrong with them. */
export function parseChainVerb(verb: 'deploy' | 'fund', argv: string[]): ChainVerb | string {
  let values: { rpc?: string; to?: string; ether?: string; 'key-file'?: string }
  try {
    const options = { rpc: { type: 'string' }, 'key-file': { type: 'string' }, to: { type: 'string' }, ether: { type: 'string' } } as const
    ;({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }))
  } catch (err) {
    return (err as Error).message
  }
  if (values.rpc === undefined || !URL.canParse(values.rpc) || !/^https?:$/.test(new URL(values.rpc).protocol)) return '--rpc must be the http(s) URL of an Ethereum JSON-RPC endpoint'
  const keyFile = values['key-file'] !== undefined ? { keyFile: values['key-file'] } : {}
  if (verb === 'deploy') return values.to !== undefined || values.ether !== undefined ? 'deploy takes no --to or --ether (fund does)' : { verb, rpc: values.rpc, ...keyFile }
  const to = (values.to ?? '').split(',').filter((a) => a !== '')
  if (to.length === 0) return '--to must name the addresses to fund, separated by commas'
  const bad = to.find((a) => !isAddress(a))
  if (bad !== undefined) return `--to: not an address: ${bad}`
  const ether = values.ether ?? FUNDING_ETHER
  if (!/^\d+(\.\d+)?$/.test(ether) || Number(ether) <= 0) return `--ether must be a positive amount, not ${ether}`
  return { verb, rpc: values.rpc, to, ether, ...keyFile }
}

/** The paying key: the file's, or none (account #0) on the local chain; refused elsewhere. */
async function payingKey(v: ChainVerb): Promise<string | undefined> {
  if (v.keyFile !== undefined) {
    const key = readFileSync(v.keyFile, 'utf8').trim()
    if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new Error(`--key-file ${v.keyFile} must hold a 0x-prefixed 32-byte hex private key`)
    return key
  }
  const chainId = Number(await new JsonRpcClient(v.rpc).call<string>('eth_chainId'))
  if (chainId !== LOCAL_CHAIN_ID) throw new Error(`${v.rpc} is chain ${chainId}, not the local chain (${LOCAL_CHAIN_ID}): give --key-file with the key of a funded account`)
  return undefined
}

export async function runChainVerb(v: ChainVerb, out: (line: string) => void): Promise<void> {
  const key = await payingKey(v)
  if (v.verb === 'deploy') {
    const chainId = Number(await new JsonRpcClient(v.rpc).call<string>('eth_chainId'))
    const d = await deployBatchPin(v.rpc, undefined, key)
    out(JSON.stringify({ rpc: v.rpc, chainId, contract: d.address, firstBlock: d.block }, null, 2))
    return
  }
  await fundAccounts(v.rpc, v.to, v.ether, key)
  out(`funded ${v.to.join(', ')} with ${v.ether} ETH each`)
}

