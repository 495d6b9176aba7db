#!/usr/bin/env node
/**
 * The network command's launcher: `node network/launch.mjs up|down|<verb> [arguments]` (npm's network:up,
 * network:down and network). Two steps, kept apart:
 *   1. prepare: the contract's artifacts (for `up`, which deploys it; network/contracts.mjs) and the build
 *      (network/build-check.mjs) made current, each compiled only when one of its sources changed, so that an
 *      edit to network/*.ts takes effect at the next run;
 *   2. run: the compiled command, `.build/<id>/cli.js`, in this same process.
 * A copy of Parley installed as a package, with its build made beforehand and no sources, needs only step 2: this
 * file is its `parley` command (package.json's `bin`), and runs `dist/build/cli.js` (network/pack.ts).
 *
 * Plain JavaScript, so that nothing has to be compiled or loaded to decide that nothing has to be compiled:
 * Node starts it, the checks hash the sources, and the command runs.
 */
import { realpathSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { CURRENT_BUILD_ENV, ensureCurrentBuild, packagedBuild, underCoverage } from './build-check.mjs'
import { ensureContracts } from './contracts.mjs'

/** The command's file in a build (network/build.ts's `cli` entry). */
const CLI_FILE = 'cli.js'
/** Read by network/code-cache.ts: where a program keeps its code cache, `none` for nowhere. */
const CODE_CACHE_ENV = 'PARLEY_CODE_CACHE_DIR'

/** Step 1: makes what `command` needs current; answers the build's directory. */
export async function prepare(command, say = (line) => process.stderr.write(`${line}\n`)) {
  const packaged = packagedBuild()
  if (packaged !== undefined) {
    // An installed package is read-only to its programs: the command's own code cache would be written into it.
    process.env[CODE_CACHE_ENV] ??= 'none'
    return packaged.dir
  }
  if (command === 'up' && ensureContracts()) say('compiled the contracts')
  const b = await ensureCurrentBuild()
  if (b.compiled) say(`compiled the network's programs into ${join('.build', basename(b.dir))} in ${b.seconds.toFixed(2)} s`)
  process.env[CURRENT_BUILD_ENV] = b.dir
  return b.dir
}

/**
 * Whether the command runs from its sources: in a working copy where c8 collects coverage (it sets
 * NODE_V8_COVERAGE), since c8 reads the source maps of tsx, not a bundle's; as the network's programs do then
 * (network/build.ts). An installed package has no sources, and runs its build.
 */
const fromSources = () => underCoverage() && packagedBuild() === undefined

/** Step 2: runs the compiled command of a build; it reads its arguments from process.argv, after the script's. */
export async function runCli(buildDir) {
  if (fromSources()) {
    const { tsImport } = await import('tsx/esm/api')
    await tsImport('./cli.ts', import.meta.url)
    return
  }
  await import(pathToFileURL(join(buildDir, CLI_FILE)).href)
}

// Run as a program: by `node network/launch.mjs`, or as a package's `parley`, through the symbolic link npm makes in
// node_modules/.bin (import.meta.url is the file it points to).
if (process.argv[1] !== undefined && realpathSync(resolve(process.argv[1])) === fileURLToPath(import.meta.url)) {
  let dir
  try {
    dir = await prepare(process.argv[2])
  } catch (err) {
    process.stderr.write(`network: ${err.message}\n`)
    process.exit(1)
  }
  await runCli(dir)
}
