import { mkdirSync, rmSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { KEEP_EXTERNAL, projectFilesPlugin, REQUIRE_BANNER } from '../../network/build.js'
import { underCoverage } from '../../network/build-check.mjs'
import { projectRoot } from '../../network/process.js'

/**
 * `node` arguments that run a TypeScript entry a test starts as a child process many times over (a crash test's
 * writer, a lock racer: test/support/db/fixtures/), compiled by esbuild once per test process as the network's
 * programs are (network/build.ts), not loaded through tsx: tsx cost each start ~1.3 s of CPU before the entry's first
 * line, the bundle ~0.2 s, and the crash suites start dozens. The compile costs about a second, so an entry started
 * once stays under tsx (whose transforms are cached on disk). Under `npm run coverage` an entry runs from its source
 * under tsx, whose source maps c8 reads.
 *
 * The bundles sit two levels below the project root, where projectFilesPlugin keeps `import.meta.url` meaning the
 * source file (a checkpoint's worker is found beside node/db/checkpoint.ts), and where the packages left out of them
 * (sql.js, which finds its .wasm beside itself) resolve from node_modules. The folder is this process's, removed when
 * it exits.
 */
export async function bundledArgs(relativePath: string, args: readonly string[] = []): Promise<string[]> {
  const m = await bundledModule(relativePath)
  return [...m.nodeFlags, m.path, ...args]
}

/**
 * The module at `relativePath` as bundledArgs runs it, for a test whose child imports it: the file to import, and the
 * `node` flags that child needs (tsx and the source under coverage).
 */
export async function bundledModule(relativePath: string): Promise<{ path: string; nodeFlags: string[] }> {
  if (underCoverage()) return { path: resolve(projectRoot, relativePath), nodeFlags: ['--import', 'tsx'] }
  let bundle = bundles.get(relativePath)
  if (bundle === undefined) {
    // One compile at a time: each ends esbuild's service when it is done.
    bundle = compiling.then(() => compile(relativePath))
    compiling = bundle.catch(() => undefined)
    bundles.set(relativePath, bundle)
    bundle.catch(() => bundles.delete(relativePath))
  }
  return { path: await bundle, nodeFlags: ['--enable-source-maps'] }
}

const bundles = new Map<string, Promise<string>>()
let compiling: Promise<unknown> = Promise.resolve()
let outDir: string | undefined

async function compile(relativePath: string): Promise<string> {
  if (outDir === undefined) {
    outDir = join(projectRoot, '.build', `entries-${process.pid}`)
    mkdirSync(outDir, { recursive: true })
    const dir = outDir
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  }
  const outfile = join(outDir, `${basename(relativePath).replace(/\.ts$/, '')}.mjs`)
  const esbuild = await import('esbuild')
  try {
    await esbuild.build({
      absWorkingDir: projectRoot,
      entryPoints: [resolve(projectRoot, relativePath)],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      sourcemap: true,
      external: [...KEEP_EXTERNAL],
      banner: REQUIRE_BANNER,
      plugins: [projectFilesPlugin({})],
      logLevel: 'silent',
    })
  } finally {
    // esbuild's compiler service is a child process: ended here rather than left to this process's exit.
    await esbuild.stop()
  }
  return outfile
}
