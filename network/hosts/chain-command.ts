/**
 * `npm run chain -- <arguments>`: the chain on its own, and what a chain of any kind needs before members use it.
 *   npm run chain -- --config F                       runs the local chain (network/chain/main.ts)
 *   npm run chain -- deploy --rpc URL [--key-file F]  deploys BatchPin; prints what members are configured with
 *   npm run chain -- fund --rpc URL --to ADDR[,ADDR] [--ether N] [--key-file F]
 */
import { CHAIN_USAGE, parseChainVerb, runChainVerb } from './chain-verbs.js'

const [first, ...rest] = process.argv.slice(2)
if (first === 'deploy' || first === 'fund') {
  const v = parseChainVerb(first, rest)
  if (typeof v === 'string') {
    process.stderr.write(`chain ${first}: ${v}\n\n${CHAIN_USAGE}`)
    process.exit(2)
  }
  await runChainVerb(v, (l) => process.stdout.write(`${l}\n`)).catch((err: unknown) => {
    process.stderr.write(`chain ${first}: ${(err as Error).message}\n`)
    process.exit(1)
  })
} else if (first === '--help' || first === '-h') {
  process.stdout.write(CHAIN_USAGE)
} else {
  // The chain itself, which reads its own arguments.
  await import('../chain/main.js')
}
