import { expect } from 'chai'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { CODE_CACHE_ENV } from '../../../network/code-cache.js'
import { bundledModule } from '../../support/bundled-entry.js'

/** A member node and IPFS run their CommonJS bundles through network/code-cache.ts (see network/build.ts). */
describe('running a bundle through the code cache', function () {
  this.timeout(30_000)
  let dir: string
  let bundle: string
  let launcher: string
  // The runner compiled once (test/support/bundled-entry.ts): each of the eight launches below paid tsx's start-up.
  let nodeFlags: string[]
  before(async () => {
    const runner = await bundledModule('network/code-cache.ts')
    nodeFlags = runner.nodeFlags
    dir = mkdtempSync(join(tmpdir(), 'parley-code-cache-'))
    bundle = join(dir, 'program.cjs')
    writeFileSync(
      bundle,
      [
        "const { sep } = require('node:path')",
        'const strict = (function () { return this })() === undefined',
        'console.log(JSON.stringify({ strict, sep, filename: __filename, dirname: __dirname, url: __parleyBundleUrl, exportsIsThis: this === module.exports }))',
        '',
      ].join('\n'),
    )
    launcher = join(dir, 'launch.mjs')
    writeFileSync(launcher, `import { runWithCodeCache } from ${JSON.stringify(pathToFileURL(runner.path).href)}\nconst r = runWithCodeCache(${JSON.stringify(bundle)})\nconsole.log(JSON.stringify(r))\n`)
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const run = (env: NodeJS.ProcessEnv = {}): { program: Record<string, unknown>; fromCache: boolean } => {
    const [program, result] = execFileSync(process.execPath, [...nodeFlags, launcher], { encoding: 'utf8', env: { ...process.env, ...env } }).trim().split('\n')
    return { program: JSON.parse(program!) as Record<string, unknown>, fromCache: (JSON.parse(result!) as { fromCache: boolean }).fromCache }
  }

  it('runs it as a strict CommonJS module that knows its own URL, writes the cache at exit, and uses it next time', () => {
    const first = run()
    expect(first.fromCache).to.equal(false)
    expect(first.program).to.deep.equal({ strict: true, sep: '/', filename: bundle, dirname: dir, url: pathToFileURL(bundle).href, exportsIsThis: true })
    expect(existsSync(`${bundle}.cache`)).to.equal(true)
    const second = run()
    expect(second.fromCache).to.equal(true)
    expect(second.program).to.deep.equal(first.program)
  })

  it('compiles again, and replaces the cache, when the cache is not one V8 accepts', () => {
    writeFileSync(`${bundle}.cache`, 'not a code cache')
    expect(run().fromCache).to.equal(false)
    expect(run().fromCache).to.equal(true)
  })

  it('keeps the cache in the folder CODE_CACHE_ENV names, or nowhere for `none`, never beside a read-only bundle', () => {
    rmSync(`${bundle}.cache`, { force: true })
    const elsewhere = join(dir, 'network-cache', 'build-id')
    expect(run({ [CODE_CACHE_ENV]: elsewhere }).fromCache).to.equal(false)
    expect(existsSync(join(elsewhere, 'program.cjs.cache'))).to.equal(true)
    expect(run({ [CODE_CACHE_ENV]: elsewhere }).fromCache).to.equal(true)
    expect(existsSync(`${bundle}.cache`)).to.equal(false)
    rmSync(elsewhere, { recursive: true, force: true })
    expect(run({ [CODE_CACHE_ENV]: 'none' }).fromCache).to.equal(false)
    expect(existsSync(`${bundle}.cache`)).to.equal(false)
    expect(existsSync(elsewhere)).to.equal(false)
  })
})
