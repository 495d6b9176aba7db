/** The environment variable that names a build known to be current (set by network/launch.mjs). */
export const CURRENT_BUILD_ENV: string
/** Bumped when the shape of a build changes in a way its inputs do not show. */
export const BUILD_FORMAT: number
/** The version of the esbuild in node_modules. */
export function esbuildVersion(root?: string): string
/** `.build/current.json` under a project root. */
export function stampFileOf(root?: string): string
/** The id of the current build, or undefined when a source changed or an output is missing. */
export function currentBuildId(root?: string, esbuild?: string): string | undefined
/** sha256 (hex) of a file's bytes, undefined when it cannot be read. */
export function hashOf(path: string): string | undefined
/** The current build's directory, compiled first when it is not current. */
export function ensureCurrentBuild(): Promise<{ dir: string; compiled: boolean; seconds: number }>
/** Where a package keeps the build it was packed with, relative to its root. */
export const PACKAGED_BUILD_DIR: string
/** The file naming that build's id, relative to the package's root. */
export const PACKAGED_BUILD_FILE: string
/** The build an installed package runs; undefined in a working copy (which has the sources). */
/** Whether c8 collects V8 coverage for this process and its children (NODE_V8_COVERAGE is set). */
export function underCoverage(): boolean
export function packagedBuild(root?: string): { id: string; dir: string } | undefined
