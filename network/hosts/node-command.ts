/**
 * `npm run node -- <arguments>`: a member node on its own.
 *   npm run node -- --config F                 runs the member (node/main.ts)
 *   npm run node -- init --config F --org NAME --host H --chain URL --contract ADDR --ipfs URL --ipfs-gateway URL
 *                                              writes its config, signing key and TLS material (member-init.ts)
 */
import { initMember, NODE_INIT_USAGE, parseInitArgs } from './member-init.js'

async function init(argv: string[]): Promise<void> {
  const opts = parseInitArgs(argv)
  if (typeof opts === 'string') {
    process.stderr.write(`node init: ${opts}\n\n${NODE_INIT_USAGE}`)
    process.exit(2)
  }
  const m = await initMember(opts).catch((err: unknown) => {
    process.stderr.write(`node init: ${(err as Error).message}\n`)
    process.exit(1)
  })
  process.stdout.write(
    [
      `wrote ${m.config} (API ${m.api}, p2p ${m.p2p})`,
      `signing address ${m.address}: fund it on the chain before the first start (on a local chain: npm run chain -- fund --rpc ${opts.chain.rpc} --to ${m.address})`,
      `then: npm run node -- --config ${m.config}`,
      '',
    ].join('\n'),
  )
}

if (process.argv[2] === 'init') {
  await init(process.argv.slice(3))
} else if (process.argv[2] === '--help' || process.argv[2] === '-h') {
  process.stdout.write(`usage: npm run node -- --config FILE   (runs the member)\n${NODE_INIT_USAGE}`)
} else {
  // The member itself, which reads its own arguments.
  await import('../../node/main.js')
}
