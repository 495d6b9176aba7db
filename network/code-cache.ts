/**
 * Runs a program's CommonJS bundle with V8's code cache, for the processes a network starts most (the member node,
 * IPFS): compiling a member's 3 MB bundle was a fifth of its start-up CPU, every start. The first process of a
 * build that runs a bundle compiles it as usual and, once it has run for a while (or when it exits, if sooner),
 * writes what V8 compiled beside it, `<bundle>.cache`; every later start of that bundle deserializes that instead
 * of compiling. The cache belongs to its build directory, whose bundle never changes; V8 itself refuses a cache
 * made by another Node version or with other V8 flags, and the bundle is then compiled and the cache written again.
 *
 * An installed package's build is not written to (network/pack.ts): its programs keep their caches where
 * CODE_CACHE_ENV says, a folder of the network's, or nowhere (`none`).
 *
 * The bundle runs as Node runs a CommonJS module (`require`, `module`, `__filename`, `__dirname`), in strict mode as
 * the ESM bundles run, with `import.meta.url` given as `__parleyBundleUrl` (network/build.ts defines it so).
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { constants, Script } from 'node:vm'

/** Where the cache of a bundle goes instead of beside it: a folder, or `none` for no cache at all. */
export const CODE_CACHE_ENV = 'PARLEY_CODE_CACHE_DIR'

/** Long enough that the functions a start runs are compiled (and so cached), short enough to outlive most runs. */
const SAVE_AFTER_MS = 15_000

type BundleFunction = (exports: object, require: NodeJS.Require, module: { exports: object }, filename: string, dirname: string, bundleUrl: string) => void

/** Runs the bundle; answers whether it ran from a cache (rather than compiled, with a cache to be written). */
export function runWithCodeCache(file: string): { fromCache: boolean } {
  const elsewhere = process.env[CODE_CACHE_ENV]
  const cacheFile = elsewhere === 'none' ? undefined : elsewhere ? join(elsewhere, `${basename(file)}.cache`) : `${file}.cache`
  let cachedData: Buffer | undefined
  try {
    if (cacheFile !== undefined) cachedData = readFileSync(cacheFile)
  } catch {
    // The first start of this build: compiled below, cached later.
  }
  // The wrapper stays on the bundle's first line, so that every line keeps its number for the source map.
  const source = `(function (exports, require, module, __filename, __dirname, __parleyBundleUrl) {'use strict';${readFileSync(file, 'utf8')}\n})`
  const script = new Script(source, {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  })
  if (cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
    let saved = false
    const save = (): void => {
      if (saved) return
      saved = true
      // Written whole under a temporary name, then renamed: processes of one build starting together each write
      // theirs, and a reader sees one complete cache or none. A cache is only ever an optimisation: no fsync.
      const tmp = `${cacheFile}.${process.pid}.tmp`
      try {
        mkdirSync(dirname(cacheFile), { recursive: true })
        writeFileSync(tmp, script.createCachedData())
        renameSync(tmp, cacheFile)
      } catch {
        // A full disk or a read-only build: the next start compiles, as this one did.
        try {
          rmSync(tmp, { force: true })
        } catch {
          // Nothing more to undo.
        }
      }
    }
    setTimeout(save, SAVE_AFTER_MS).unref()
    process.once('exit', save)
  }
  const run = script.runInThisContext() as BundleFunction
  const module = { exports: {} }
  run.call(module.exports, module.exports, createRequire(file), module, file, dirname(file), pathToFileURL(file).href)
  return { fromCache: cachedData !== undefined && script.cachedDataRejected !== true }
}
