/**
 * The web console's browser bundle, one step of network/build.ts's build: `console/src/main.ts` and
 * `console/style.css` bundled by esbuild for the browser (minified, content-hashed names, source maps) into
 * `<build>/ui/assets/`, and `console/index.html` written to `<build>/ui/index.html` naming those files. The API page
 * (Swagger UI from the swagger-ui-dist package, `console/src/api-page/`) is bundled beside it and written to
 * `<build>/ui/api.html`. The node serves that directory at `/ui`, and the API page at `/api` (node/api/ui.ts).
 * Everything comes from the project and node_modules: nothing is fetched at build or run time.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BuildOptions, BuildResult, Plugin } from 'esbuild'
import { API_PAGE_FILE } from '../node/api/ui.js'

/** The console's directory inside a build. */
export const CONSOLE_DIR = 'ui'
/** What index.html is made from, and is marked with where the bundle's files go. */
export const CONSOLE_HTML = 'console/index.html'
export const CONSOLE_TSCONFIG = 'console/tsconfig.json'
const ENTRY_SCRIPT = 'console/src/main.ts'
const ENTRY_STYLE = 'console/style.css'
export const API_HTML = 'console/api.html'
const API_SCRIPT = 'console/src/api-page/main.ts'
const API_STYLE = 'console/api-page.css'

type Esbuild = typeof import('esbuild')

/** Bundles the console into `<outDir>/ui/`; answers esbuild's result (its metafile lists every input read). */
export async function buildConsole(esbuild: Esbuild, opts: { projectRoot: string; outDir: string; plugins: Plugin[] }): Promise<BuildResult<{ metafile: true }>> {
  const ui = join(opts.outDir, CONSOLE_DIR)
  const options = {
    absWorkingDir: opts.projectRoot,
    entryPoints: { main: ENTRY_SCRIPT, style: ENTRY_STYLE, api: API_SCRIPT, 'api-style': API_STYLE },
    outdir: join(ui, 'assets'),
    // Hashed names let the node tell browsers to keep assets for good; index.html is what changes.
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    // Current Chromium and Firefox (the console's promise), and a year or two behind them.
    target: ['chrome111', 'firefox111', 'safari16.4'],
    minify: true,
    sourcemap: 'linked',
    tsconfig: CONSOLE_TSCONFIG,
    legalComments: 'none',
    metafile: true,
    logLevel: 'silent',
    plugins: opts.plugins,
  } satisfies BuildOptions
  const result = await esbuild.build(options)
  const outputOf = (entry: string): string => {
    for (const [out, meta] of Object.entries(result.metafile.outputs)) {
      if (meta.entryPoint === entry && !out.endsWith('.map')) return out.slice(out.lastIndexOf('/') + 1)
    }
    throw new Error(`the console build wrote no output for ${entry}`)
  }
  const page = (template: string, script: string, style: string, assets: string, out: string): void => {
    let html = readFileSync(join(opts.projectRoot, template), 'utf8')
    for (const [mark, file] of [
      ['%SCRIPT%', outputOf(script)],
      ['%STYLE%', outputOf(style)],
    ] as const) {
      // A page that names no bundle would load blank: the build fails instead.
      if (html.split(mark).length !== 2) throw new Error(`${template} must contain ${mark} exactly once (where the bundle's ${file} goes)`)
      html = html.replace(mark, `${assets}${file}`)
    }
    writeFileSync(join(ui, out), html)
  }
  page(CONSOLE_HTML, ENTRY_SCRIPT, ENTRY_STYLE, 'assets/', 'index.html')
  // Served at /api, outside /ui: its assets are named by absolute path.
  page(API_HTML, API_SCRIPT, API_STYLE, '/ui/assets/', API_PAGE_FILE)
  return result
}
