import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { compileMallocTrim } from '../../../../network/build-native.js'
import { projectRoot } from '../../../../network/process.js'
import { loadMallocTrim, mallocTrimBesideEntry, MALLOC_TRIM_FILE } from '../../../../node/core/malloc-trim.js'

/**
 * The module is compiled here as a build compiles it (network/build-native.ts): on this project's machines (Linux,
 * glibc, a C compiler and Node's headers) a build without it leaves idle members ~10 MiB larger, so a machine that
 * cannot compile it fails this test rather than skip it.
 */
describe('malloc_trim module', function () {
  this.timeout(60_000)
  let dir: string
  let file: string
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-malloc-trim-'))
    const built = await compileMallocTrim(projectRoot, dir)
    if ('skipped' in built) throw new Error(`the module did not compile here: ${built.skipped}`)
    file = built.file
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('gives back the free pages between live blocks, which malloc keeps when only its top is free', async () => {
    // 64 MiB of 16 KiB blocks (malloc's, below its mmap threshold), every sixteenth kept, the last among them: what is
    // freed lies in holes below a live block, as TurboFan's zones do in a compiler thread's arena.
    // The blocks are made in a function, so that nothing but the kept ones stays reachable once it returns.
    const script = join(dir, 'fragment.cjs')
    writeFileSync(
      script,
      `const m = { exports: {} }
      process.dlopen(m, process.argv[2])
      const rss = () => process.memoryUsage().rss / 2 ** 20
      function fragment() {
        const all = []
        for (let i = 0; i < 4096; i++) all.push(Buffer.allocUnsafeSlow(16 * 1024).fill(1))
        return all.filter((_, i) => i % 16 === 15)
      }
      const kept = fragment()
      gc()
      setTimeout(() => {
        const before = rss()
        const released = m.exports.trim()
        console.log(JSON.stringify({ before, after: rss(), released, kept: kept.length }))
      }, 200)`,
    )
    // Without any MALLOC_* tunable of the caller's (a low mmap threshold maps such blocks of their own).
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MALLOC_') && k !== 'GLIBC_TUNABLES'))
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', script, file], { env, timeout: 30_000 })
    const r = JSON.parse(stdout) as { before: number; after: number; released: boolean; kept: number }
    expect(r.kept).to.equal(256)
    expect(r.released).to.equal(true)
    expect(r.before - r.after, `RSS ${r.before.toFixed(1)} → ${r.after.toFixed(1)} MiB`).to.be.greaterThan(40)
  })

  it('loads as a function that says whether any page went', () => {
    const loaded = loadMallocTrim(file)
    if (!('trim' in loaded)) throw new Error(loaded.unavailable)
    expect(loaded.trim()).to.be.a('boolean')
  })

  it('says why there is none when the build has none, or it is not a module of this platform', () => {
    const missing = loadMallocTrim(join(dir, 'absent.node'))
    expect(missing).to.have.property('unavailable').that.matches(/absent\.node is not there \(the build found no C compiler/)
    const notAModule = join(dir, 'not-a-module.node')
    writeFileSync(notAModule, 'text, not a shared object')
    expect(loadMallocTrim(notAModule)).to.have.property('unavailable').that.matches(/not-a-module\.node does not load here: .+/)
  })

  it("is looked for beside a build's node.js only, never beside a source run under tsx", () => {
    expect(mallocTrimBesideEntry('/x/.build/0123456789abcdef/node.js')).to.equal(join('/x/.build/0123456789abcdef', MALLOC_TRIM_FILE))
    expect(mallocTrimBesideEntry('/x/node/main.ts')).to.equal(undefined)
    expect(mallocTrimBesideEntry(undefined)).to.equal(undefined)
  })
})
