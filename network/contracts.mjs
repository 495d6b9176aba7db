/**
 * The contract's compiled artifacts (`artifacts/`, what the network deploys), compiled only when what they are made
 * from changed: the Solidity sources, the solc-js and Hardhat that compile them, and hardhat.config.ts (its compile
 * settings, and the compiler it arranges). Their hash is recorded in Hardhat's cache folder once a compile succeeds; a
 * matching hash with the artifacts present answers in a few milliseconds, where loading Hardhat only for it to find
 * nothing to compile took a second. A fresh clone (no artifacts/) compiles, offline, as hardhat.config.ts arranges.
 *
 * Plain JavaScript, so that it runs before anything is compiled: `node network/contracts.mjs` (npm's
 * `build:contracts`, run before the tests, the bench and the fuzzer) and the launcher of `network:up`
 * (network/launch.mjs).
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(join(root, 'package.json'))
const SOURCES = join(root, 'contracts')
const ARTIFACTS = join(root, 'artifacts')
/**
 * In Hardhat's cache folder, which `hardhat clean` empties with the artifacts; not among the artifacts, where
 * `hardhat compile` deletes every file it did not write.
 */
const CACHE = join(root, 'cache')
const HASH_FILE = join(CACHE, 'parley-contracts.json')

/** The hash of everything the artifacts are compiled from. */
export function contractsSourceHash() {
  const h = createHash('sha256')
  const part = (name, content) => h.update(`${name}\0${content.length}\0`).update(content)
  for (const file of readdirSync(SOURCES).filter((f) => f.endsWith('.sol')).sort()) part(`contracts/${file}`, readFileSync(join(SOURCES, file)))
  // The whole config, not only its `solidity` block: reading that without loading the config would be a guess.
  part('hardhat.config.ts', readFileSync(join(root, 'hardhat.config.ts')))
  part('solc', require('solc/package.json').version)
  part('hardhat', require('hardhat/package.json').version)
  return h.digest('hex')
}

/** Whether the recorded hash matches and every contract of every source has its artifact. */
export function contractsUpToDate(hash = contractsSourceHash()) {
  let recorded
  try {
    recorded = JSON.parse(readFileSync(HASH_FILE, 'utf8')).hash
  } catch {
    return false
  }
  return recorded === hash && artifactsComplete(SOURCES, ARTIFACTS)
}

/**
 * Whether each contract a `.sol` file of `sources` declares has its artifact (`<artifacts>/contracts/<file>/<Name>.json`,
 * as Hardhat writes it): a folder left with only its debug file, say, is compiled again.
 */
export function artifactsComplete(sources, artifacts) {
  return readdirSync(sources)
    .filter((f) => f.endsWith('.sol'))
    .every((f) => {
      const declared = [...readFileSync(join(sources, f), 'utf8').matchAll(/^\s*(?:abstract\s+)?contract\s+(\w+)/gm)].map((m) => m[1])
      return declared.every((name) => existsSync(join(artifacts, 'contracts', f, `${name}.json`)))
    })
}

/**
 * Compiles the contracts through Hardhat when they are not up to date. Answers whether it compiled; throws when the
 * compile fails (Hardhat's own output went to stderr).
 */
export function ensureContracts() {
  const hash = contractsSourceHash()
  if (contractsUpToDate(hash)) return false
  const hardhat = join(dirname(require.resolve('hardhat/package.json')), require('hardhat/package.json').bin.hardhat)
  const r = spawnSync(process.execPath, [hardhat, 'compile', '--quiet'], {
    cwd: root,
    env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  if (r.error) throw r.error
  if (r.status !== 0) throw new Error(`compiling the contracts failed (hardhat compile exited with ${r.status ?? r.signal})`)
  // Written whole, then renamed: an interrupted write leaves no record, so the next run compiles again.
  mkdirSync(CACHE, { recursive: true })
  const tmp = `${HASH_FILE}.${process.pid}.tmp`
  writeFileSync(tmp, `${JSON.stringify({ hash }, null, 2)}\n`)
  renameSync(tmp, HASH_FILE)
  return true
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    ensureContracts()
  } catch (err) {
    process.stderr.write(`build:contracts: ${err.message}\n`)
    process.exit(1)
  }
}
