/**
 * Whether the build in `.build/` (network/build.ts) is current, and making it so: the one check, shared by
 * network/build.ts (which compiles, and checks before it does) and by what runs before any TypeScript is compiled
 * or loaded: the launcher of the network command (network/launch.mjs) and `npm run build` (this file as a script).
 * Plain JavaScript for that reason.
 *
 * `.build/current.json` (the stamp) names the newest build, the files it must hold, and the content hash of every
 * source it was compiled from; the build is current when its format and esbuild version are this project's, each
 * source still has its hash (a few tens of milliseconds for the ~300 files) and each output exists.
 *
 * When it is not, `ensureCurrentBuild()` compiles it with network/build.ts itself, bundled on the spot by esbuild's
 * API into a temporary module (a tenth of a second, no TypeScript loader), so that how a build is made stays in
 * one place.
 *
 * An installed package (network/pack.ts) has no sources to check and no esbuild: it runs the build made when it was
 * packed, `dist/build/`, as it is (`packagedBuild()`).
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * Bumped when the shape of a build changes in a way its inputs do not show (2: the web console in `ui/`; 3: npm
 * packages bundled, stacks mapped by the bundles themselves; 4: node and IPFS run through the code cache; 5: the
 * network command's own bundle, outputs listed in the stamp; 6: the packages it loads from node_modules listed in it).
 */
export const BUILD_FORMAT = 6

/**
 * Names, in the environment of a process, a build that is known to be current: network/launch.mjs sets it once its
 * check has passed, so that the command it runs (network/build.ts's ensureBuild) does not hash every source again.
 * The network's programs inherit it and never read it.
 */
export const CURRENT_BUILD_ENV = 'PARLEY_BUILD_DIR'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const BUILDER_SOURCE = 'network/build.ts'

/** Where a package keeps the build it was packed with (two levels below the root, as `.build/<id>/` is). */
export const PACKAGED_BUILD_DIR = join('dist', 'build')
/** Written by network/pack.ts beside that build: `{ "id": <the build's id> }`. */
export const PACKAGED_BUILD_FILE = join('dist', 'build.json')

/**
 * The build an installed package runs, `{ id, dir }`, or undefined in a working copy. A working copy is told by its
 * sources (network/build.ts), so that a `dist/` left behind by `npm pack` never stands in for a current build there.
 */
/**
 * Whether c8 collects V8 coverage for this process and its children (it sets NODE_V8_COVERAGE): a working copy's
 * programs, command and builder then run from their TypeScript under tsx, whose source maps c8 reads (a bundle's
 * it cannot).
 */
export function underCoverage() {
  return (process.env.NODE_V8_COVERAGE ?? '') !== ''
}

export function packagedBuild(root = projectRoot) {
  if (existsSync(join(root, BUILDER_SOURCE))) return undefined
  let id
  try {
    id = JSON.parse(readFileSync(join(root, PACKAGED_BUILD_FILE), 'utf8')).id
  } catch {
    return undefined
  }
  return typeof id === 'string' && /^[0-9a-f]{16}$/.test(id) ? { id, dir: join(root, PACKAGED_BUILD_DIR) } : undefined
}

/** The esbuild in node_modules, by its package.json: loading esbuild itself costs more than the whole check. */
export function esbuildVersion(root = projectRoot) {
  return createRequire(join(root, 'package.json'))('esbuild/package.json').version
}

/** The stamp's path under a project root. */
export function stampFileOf(root = projectRoot) {
  return join(root, '.build', 'current.json')
}

/**
 * The id of the current build (its directory is `.build/<id>`) when it is complete and was made from exactly the
 * files there are now; undefined when it must be compiled.
 */
export function currentBuildId(root = projectRoot, esbuild = esbuildVersion(root)) {
  let stamp
  try {
    stamp = JSON.parse(readFileSync(stampFileOf(root), 'utf8'))
  } catch {
    return undefined
  }
  if (stamp === null || typeof stamp !== 'object' || stamp.format !== BUILD_FORMAT || stamp.esbuild !== esbuild) return undefined
  if (typeof stamp.id !== 'string' || !/^[0-9a-f]{16}$/.test(stamp.id) || typeof stamp.inputs !== 'object' || !Array.isArray(stamp.outputs)) return undefined
  for (const [rel, hash] of Object.entries(stamp.inputs)) if (hashOf(join(root, rel)) !== hash) return undefined
  const dir = join(root, '.build', stamp.id)
  return stamp.outputs.every((f) => typeof f === 'string' && existsSync(join(dir, f))) ? stamp.id : undefined
}

/** sha256 (hex) of a file's bytes, undefined when it cannot be read. */
export function hashOf(path) {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex')
  } catch {
    return undefined
  }
}

/**
 * The directory of the current build, compiled first when it is not current. `compiled` says whether it was,
 * `seconds` how long this took.
 */
export async function ensureCurrentBuild() {
  const started = performance.now()
  const packaged = packagedBuild()
  if (packaged !== undefined) return { dir: packaged.dir, compiled: false, seconds: (performance.now() - started) / 1000 }
  const id = currentBuildId()
  if (id !== undefined) {
    const dir = join(projectRoot, '.build', id)
    // Its mtime says when a build was last used, which is what network/build.ts's pruning goes by.
    const now = new Date()
    utimesSync(dir, now, now)
    return { dir, compiled: false, seconds: (performance.now() - started) / 1000 }
  }
  const builder = await loadBuilder()
  const b = await builder.ensureBuild()
  return { dir: b.dir, compiled: b.compiled, seconds: (performance.now() - started) / 1000 }
}

/** network/build.ts, bundled into a temporary module beside the builds and imported (under c8, from its source). */
async function loadBuilder() {
  if (underCoverage()) {
    const { tsImport } = await import('tsx/esm/api')
    return tsImport('./build.ts', import.meta.url)
  }
  const esbuild = await import('esbuild')
  const buildRoot = join(projectRoot, '.build')
  mkdirSync(buildRoot, { recursive: true })
  const file = join(buildRoot, `builder-${process.pid}-${randomBytes(4).toString('hex')}.mjs`)
  try {
    await esbuild.build({
      absWorkingDir: projectRoot,
      entryPoints: [BUILDER_SOURCE],
      outfile: file,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      packages: 'external',
      // Its modules find the project from their own URL (network/process.ts's projectRoot, from network/): the URL of
      // build.ts stands in for each. Spelled in parts, as in build.ts, for the rewrite that bundles this file.
      define: { [['import', 'meta', 'url'].join('.')]: JSON.stringify(pathToFileURL(join(projectRoot, BUILDER_SOURCE)).href) },
      logLevel: 'silent',
    })
    return await import(pathToFileURL(file).href)
  } finally {
    rmSync(file, { force: true })
  }
}

/** `npm run build`: compiles now rather than at the next start. */
// No top-level await: this module is also bundled into the network command, which may be CommonJS.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureCurrentBuild().then(
    (b) => console.log(`${b.compiled ? 'compiled' : 'up to date:'} ${join('.build', basename(b.dir))} (${b.seconds.toFixed(2)} s)`),
    (err) => {
      process.stderr.write(`build: ${err.message}\n`)
      process.exitCode = 1
    },
  )
}
