/**
 * The native code a build carries beside its bundles: node/core/malloc-trim.c, compiled into `malloc-trim.node` with
 * the machine's C compiler (`$CC`, else the first of `cc`, `gcc` and `clang`) against Node's own Node-API headers
 * (npm's `nodedir` when npm runs the build, and the `include/node` of the running `node`'s installation). It is
 * optional: without a compiler, headers or glibc the build goes on without it, says why, and its members keep the
 * memory it would give back (node/core/malloc-trim.ts). A Node-API module runs on every later Node of the same
 * platform, so a package built on Linux x64 with glibc carries one for those.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { MALLOC_TRIM_FILE } from '../node/core/malloc-trim.js'

export const MALLOC_TRIM_SOURCE = 'node/core/malloc-trim.c'

/** What a compilation left: the module's path, or why there is none. */
export type NativeResult = { file: string } | { skipped: string }

export interface NativeOptions {
  /** The C compiler to run, with any arguments of its own (as `$CC` may be: `ccache gcc`). */
  compiler?: string
  /** The environment: `CC`, `npm_config_nodedir`, and the PATH the compiler is looked for in. */
  env?: NodeJS.ProcessEnv
  /** Folders to look for `node_api.h` in, first found wins. */
  headerDirs?: string[]
  platform?: NodeJS.Platform
}

/** Compiles the malloc_trim module from `projectRoot` into `outDir`. */
export async function compileMallocTrim(projectRoot: string, outDir: string, opts: NativeOptions = {}): Promise<NativeResult> {
  const platform = opts.platform ?? process.platform
  if (platform !== 'linux') return { skipped: `malloc_trim is glibc's, and this is ${platform}` }
  const env = opts.env ?? process.env
  const headerDirs = opts.headerDirs ?? nodeHeaderDirs(env)
  const headers = headerDirs.find((d) => existsSync(join(d, 'node_api.h')))
  if (headers === undefined) return { skipped: `no node_api.h in ${headerDirs.join(', ')}` }
  const chosen = opts.compiler ?? env.CC
  const compilers = chosen !== undefined && chosen.trim() !== '' ? [chosen.trim()] : ['cc', 'gcc', 'clang']
  const file = join(outDir, MALLOC_TRIM_FILE)
  for (const compiler of compilers) {
    const [program, ...own] = compiler.split(/\s+/) as [string, ...string[]]
    try {
      await promisify(execFile)(program, [...own, '-O2', '-shared', '-fPIC', '-Wall', '-I', headers, join(projectRoot, MALLOC_TRIM_SOURCE), '-o', file], {
        env,
        timeout: 60_000,
      })
      return { file }
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string }
      if (e.code === 'ENOENT') continue
      return { skipped: `${compiler} could not compile ${MALLOC_TRIM_SOURCE}: ${e.stderr?.trim().split('\n').slice(0, 3).join(' ') || e.message}` }
    }
  }
  return { skipped: `no C compiler to compile ${MALLOC_TRIM_SOURCE} (looked for ${compilers.join(', ')})` }
}

/** Where Node's headers are: npm's `nodedir` when npm runs this, and the installation of the running `node`. */
function nodeHeaderDirs(env: NodeJS.ProcessEnv): string[] {
  const fromNpm = env.npm_config_nodedir
  return [...(fromNpm ? [join(fromNpm, 'include', 'node')] : []), join(dirname(dirname(process.execPath)), 'include', 'node')]
}
