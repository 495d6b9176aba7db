import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'

const boots = new Map<string, string>()

/**
 * The code a `new Worker(code, { eval: true })` runs to load the worker module `name`. A node run from its build
 * (network/build.ts bundles each worker beside node.js) loads the compiled `<name>.js`; one run from the sources
 * (tests, `npm run node`) loads `sourceUrl`, the TypeScript entry, through tsx's loader registered inside the worker.
 * Worked out once per worker: the lookups are file-system and module-resolution calls, on paths that must stay quick.
 */
export function workerBoot(name: string, sourceUrl: URL): string {
  let boot = boots.get(name)
  if (boot === undefined) {
    boot = bootCode(name, sourceUrl)
    boots.set(name, boot)
  }
  return boot
}

function bootCode(name: string, sourceUrl: URL): string {
  const bundle = process.argv[1]
  const compiled = bundle ? join(dirname(bundle), `${name}.js`) : undefined
  if (compiled && basename(bundle!) === 'node.js' && existsSync(compiled)) return `import(${JSON.stringify(pathToFileURL(compiled).href)})`
  return `import(${JSON.stringify(tsxLoaderUrl(name))}).then((m) => { m.register(); return import(${JSON.stringify(sourceUrl.href)}) })`
}

/**
 * The ESM entry of tsx's API, from its package's export map. Not `import.meta.resolve`: this module may itself run
 * as CommonJS (mocha loads tests through tsx's require hook), where that does not exist; and not
 * `require.resolve('tsx/esm/api')`, which picks the CommonJS variant.
 */
function tsxLoaderUrl(name: string): string {
  const require = createRequire(import.meta.url)
  const pkgPath = require.resolve('tsx/package.json')
  const pkg = require(pkgPath) as { exports: Record<string, { import?: { default?: string } } | string> }
  const entry = pkg.exports['./esm/api']
  const rel = typeof entry === 'object' ? entry.import?.default : undefined
  if (!rel) throw new Error(`tsx does not export ./esm/api for import: cannot start the ${name}`)
  return pathToFileURL(join(dirname(pkgPath), rel)).href
}
