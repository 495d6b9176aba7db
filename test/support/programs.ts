import { ensureBuild, type Build, type EntryName } from '../../network/build.js'

let build: Promise<Build> | undefined

/**
 * `node` arguments that run one of the network's programs (chain, IPFS, member node) outside a network, as a test
 * starts it: from the build that networks run (network/build.ts), not from its TypeScript under tsx, which costs each
 * start two to three times the CPU (a chain: ~0.9 s against ~2.6 s to its ready line). What runs is the code a
 * network runs. Under `npm run coverage` the build hands back the TypeScript entry under tsx, whose source maps c8
 * reads, so what these processes run is still measured.
 */
export async function programArgs(name: EntryName, args: string[]): Promise<string[]> {
  // One check of the build per test process: its sources do not change during a run.
  build ??= ensureBuild()
  return (await build).nodeArgs(name, args)
}
