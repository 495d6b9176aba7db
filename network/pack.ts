/**
 * What `npm pack` ships besides three plain-JavaScript files (package.json's `prepack` runs this): `dist/`, so that
 * an installed copy of Parley runs without compiling anything, and without the compilers (solc, esbuild, tsx, tsc):
 *
 *   dist/build/      the network's programs: network/build.ts's current build, the web console in `ui/` included,
 *                    without what a build gains while it runs (code caches, a new member's database);
 *   dist/build.json  that build's id (network/build-check.mjs's packagedBuild reads it);
 *   dist/lib/        the library, `parley` (network/index.ts) and `parley/suite` (network/suite.ts): ESM bundles
 *                    that share their chunks, so both hold the same NetworkControls class;
 *   dist/types/      their declarations, from tsc (tsconfig.package.json): those the entries reach.
 *
 * The contract's artifact (compiled here when its sources changed) ships from artifacts/. The bundles leave a few
 * packages in node_modules (build.ts's KEEP_EXTERNAL); each one they load (esbuild's metafiles list them) must be
 * among package.json's `dependencies`, or a consumer's install would not have it: checked here, once they are written.
 * Every bundle stays two levels below the package root, as `.build/<id>/` is in a working copy: the bundles find
 * package.json and the artifacts by paths relative to themselves (projectFilesPlugin).
 */
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { ensureBuild, externalImports, EXTERNALS_FILE, KEEP_EXTERNAL, META_URL, projectFilesPlugin, writtenAtRunTime } from './build.js'
import { hashOf, PACKAGED_BUILD_DIR, PACKAGED_BUILD_FILE } from './build-check.mjs'
import { sha256Hex } from '../node/core/hashes.js'
import { MALLOC_TRIM_FILE } from '../node/core/malloc-trim.js'
import { ensureContracts } from './contracts.mjs'
import { projectRoot } from './process.js'

export const LIBRARY_ENTRIES = { index: 'network/index.ts', suite: 'network/suite.ts' } as const
const LIBRARY_DIR = join('dist', 'lib')
const TYPES_TSCONFIG = 'tsconfig.package.json'
/**
 * Where tsc writes a declaration for every module the entries import (tsconfig.package.json), with its record of what
 * it emitted, kept between packs so that an unchanged pack emits nothing. Not shipped: only the declarations the
 * entries' reach are copied into TYPES_DIR.
 */
const TYPES_EMITTED = join('dist', 'declarations')
const TYPES_BUILD_INFO = join('dist', 'declarations.tsbuildinfo')
const TYPES_DIR = join('dist', 'types')
/** declarationsKey() of what TYPES_DIR was made from. */
const TYPES_KEY = join('dist', 'types.key')

/**
 * Packages a bundle names that a consumer need not install: `ws`'s optional native helpers (it works without them);
 * esbuild, which only a working copy loads, to compile a build (build.ts); solc, which the Hardhat configuration
 * names for compiling the contract, which a package never does; `pg`'s libpq binding, which the node never asks for.
 */
const NOT_NEEDED_AT_RUN_TIME = new Set(['bufferutil', 'utf-8-validate', 'esbuild', 'solc', 'pg-native'])

/**
 * Packages the programs load by a path they compute, which no scan of a bundle can see: Ajv's meta-schemas, required
 * by node/data/validation-schema.ts from `ajv/dist/refs/...`. They must be dependencies as well.
 */
const LOADED_BY_COMPUTED_PATH = ['ajv']

/** A package name from an import specifier (`@scope/name/sub` → `@scope/name`), undefined for Node's own modules. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('node:') || specifier.startsWith('.') || specifier.startsWith('/')) return undefined
  const parts = specifier.split('/')
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
  return builtinModules.includes(name) ? undefined : name
}

/** Bundles the library into `outDir`; answers the modules it loads from node_modules. */
async function compileLibrary(outDir: string): Promise<string[]> {
  const esbuild = await import('esbuild')
  try {
    const r = await esbuild.build({
      absWorkingDir: projectRoot,
      entryPoints: LIBRARY_ENTRIES,
      outdir: outDir,
      bundle: true,
      splitting: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      external: [...KEEP_EXTERNAL],
      // CommonJS packages inside an ESM bundle call `require` for Node's built-ins (as in build.ts).
      banner: { js: `import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(${META_URL});` },
      plugins: [projectFilesPlugin({})],
      logLevel: 'silent',
      metafile: true,
    })
    return externalImports(r.metafile)
  } finally {
    await esbuild.stop()
  }
}

/** The declaration files `entries` import, themselves included, by paths relative to `dir`. */
export function declarationsReached(dir: string, entries: string[]): string[] {
  const reached = new Set<string>()
  const queue = [...entries]
  for (let rel = queue.pop(); rel !== undefined; rel = queue.pop()) {
    if (reached.has(rel)) continue
    reached.add(rel)
    const text = readFileSync(join(dir, rel), 'utf8')
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm)) {
      const target = join(dirname(rel), m[1]!.replace(/\.(m|c)?js$/, '.d.$1ts'))
      if (existsSync(join(dir, target))) queue.push(target)
    }
  }
  return [...reached].sort()
}

/**
 * A hash of everything the declarations are made from: every TypeScript file of network/ and node/ (what the entries
 * import, types included, which a bundle's inputs leave out), the hand-written .d.mts, both tsconfigs, and
 * package-lock.json for the versions of TypeScript and of the packages' own types. A few tens of milliseconds, where
 * tsc takes seconds to find that nothing changed.
 */
function declarationsKey(): string {
  const files = ['network', 'node'].flatMap((dir) =>
    readdirSync(join(projectRoot, dir), { recursive: true, encoding: 'utf8' })
      .filter((rel) => /\.(ts|mts)$/.test(rel))
      .map((rel) => join(dir, rel)),
  )
  const parts = [...files.sort(), 'tsconfig.json', TYPES_TSCONFIG, 'package-lock.json'].flatMap((rel) => [rel, hashOf(join(projectRoot, rel)) ?? 'missing'])
  return sha256Hex(parts.join('\0'))
}

/** Writes dist/types, unless what it is made from is unchanged since the last pack; answers whether it ran tsc. */
function compileDeclarations(): boolean {
  const key = declarationsKey()
  const keyFile = join(projectRoot, TYPES_KEY)
  if (existsSync(join(projectRoot, TYPES_DIR)) && existsSync(keyFile) && readFileSync(keyFile, 'utf8').trim() === key) return false
  rmSync(keyFile, { force: true })
  // Declarations of files removed since the last pack would linger beside tsc's incremental record: without the
  // record, start from nothing.
  if (!existsSync(join(projectRoot, TYPES_BUILD_INFO))) rmSync(join(projectRoot, TYPES_EMITTED), { recursive: true, force: true })
  const tsc = createRequire(join(projectRoot, 'package.json')).resolve('typescript/bin/tsc')
  // --noCheck: tsc emits the declarations without checking the modules' bodies, which `npm run typecheck` (and the
  // suite's test/types) checks for the whole project, these modules included. The declarations are the same byte for
  // byte; the emit takes ~6 s instead of ~15 s.
  const r = spawnSync(process.execPath, [tsc, '-p', TYPES_TSCONFIG, '--pretty', 'false', '--noCheck'], { cwd: projectRoot, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`tsc -p ${TYPES_TSCONFIG} failed:\n${r.stdout}${r.stderr}`)
  const emitted = join(projectRoot, TYPES_EMITTED)
  // The plain-JavaScript modules have declarations written by hand, which tsc does not copy.
  for (const f of readdirSync(join(projectRoot, 'network')).filter((n) => n.endsWith('.d.mts'))) cpSync(join(projectRoot, 'network', f), join(emitted, 'network', f))
  const entries = Object.values(LIBRARY_ENTRIES).map((src) => src.replace(/\.ts$/, '.d.ts'))
  const out = join(projectRoot, TYPES_DIR)
  rmSync(out, { recursive: true, force: true })
  for (const rel of declarationsReached(emitted, entries)) cpSync(join(emitted, rel), join(out, rel))
  writeFileSync(keyFile, `${key}\n`)
  return true
}

/** Makes `dist/`, saying what each step took; throws when a bundle loads a package that is not a dependency. */
export async function pack(say: (line: string) => void = () => {}): Promise<void> {
  const t0 = performance.now()
  const seconds = (): string => `${((performance.now() - t0) / 1000).toFixed(1)} s`
  if (ensureContracts()) say(`compiled the contracts (${seconds()})`)
  const build = await ensureBuild()
  say(`${build.compiled ? 'compiled' : 'reused'} the build ${basename(build.dir)} (${seconds()})`)
  // What docs/package.md promises the package carries on Linux: without it, every installed member keeps ~10 MiB more.
  if (process.platform === 'linux' && !existsSync(join(build.dir, MALLOC_TRIM_FILE))) {
    throw new Error(`the build ${basename(build.dir)} has no ${MALLOC_TRIM_FILE} (its compile said why); install a C compiler, remove .build/current.json and pack again`)
  }
  const buildOut = join(projectRoot, PACKAGED_BUILD_DIR)
  const libOut = join(projectRoot, LIBRARY_DIR)
  rmSync(buildOut, { recursive: true, force: true })
  rmSync(libOut, { recursive: true, force: true })
  cpSync(build.dir, buildOut, { recursive: true, filter: (src) => !writtenAtRunTime(basename(src)) })
  writeFileSync(join(projectRoot, PACKAGED_BUILD_FILE), `${JSON.stringify({ id: basename(build.dir) })}\n`)
  const libraryLoads = await compileLibrary(libOut)
  say(`bundled the library into ${LIBRARY_DIR} (${seconds()})`)
  say(`${compileDeclarations() ? 'wrote' : 'kept'} the declarations in ${TYPES_DIR} (${seconds()})`)

  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> }
  const declared = new Set(Object.keys(pkg.dependencies ?? {}))
  const buildLoads = JSON.parse(readFileSync(join(buildOut, EXTERNALS_FILE), 'utf8')) as string[]
  const loaded = new Set([...buildLoads, ...libraryLoads].map(packageOf).filter((n) => n !== undefined))
  const missing = [...loaded, ...LOADED_BY_COMPUTED_PATH].filter((name) => !declared.has(name) && !NOT_NEEDED_AT_RUN_TIME.has(name))
  if (missing.length > 0) throw new Error(`the bundles load packages that package.json's dependencies lack: ${[...new Set(missing)].join(', ')}`)
}

if (process.argv[1] !== undefined && basename(process.argv[1]) === 'pack.ts') {
  pack((l) => process.stderr.write(`prepack: ${l}\n`)).catch((err: unknown) => {
    process.stderr.write(`prepack: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
