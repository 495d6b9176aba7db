import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { compileMallocTrim } from '../../../network/build-native.js'
import { projectRoot } from '../../../network/process.js'

/** A build without the module is still a build: each way of not having it says why (its compiling: malloc-trim.test.ts). */
describe('network build: native code', () => {
  let dir: string
  before(() => (dir = mkdtempSync(join(tmpdir(), 'parley-build-native-'))))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const nodeHeaders = join(dirname(dirname(process.execPath)), 'include', 'node')

  it('is not compiled off Linux, where malloc_trim is not', async () => {
    expect(await compileMallocTrim(projectRoot, dir, { platform: 'darwin' })).to.deep.equal({ skipped: "malloc_trim is glibc's, and this is darwin" })
  })

  it('says where it looked for Node-API headers when none are there', async () => {
    expect(await compileMallocTrim(projectRoot, dir, { headerDirs: [join(dir, 'nowhere')] })).to.deep.equal({ skipped: `no node_api.h in ${join(dir, 'nowhere')}` })
  })

  it('names a compiler that is not installed, and the first lines of what a compiler that fails prints', async () => {
    const absent = await compileMallocTrim(projectRoot, dir, { compiler: 'no-such-cc-here', headerDirs: [nodeHeaders] })
    expect(absent).to.deep.equal({ skipped: 'no C compiler to compile node/core/malloc-trim.c (looked for no-such-cc-here)' })
    // Without $CC, the first of cc, gcc and clang on the PATH: here only a `gcc` that says what it was asked.
    const bin = join(dir, 'bin')
    mkdirSync(bin)
    writeFileSync(join(bin, 'gcc'), '#!/bin/sh\necho "gcc was asked: $1" >&2\nexit 3\n', { mode: 0o755 })
    const env = { PATH: bin }
    expect(await compileMallocTrim(projectRoot, dir, { env, headerDirs: [nodeHeaders] })).to.deep.equal({ skipped: 'gcc could not compile node/core/malloc-trim.c: gcc was asked: -O2' })
    // $CC as make takes it, with arguments of its own.
    expect(await compileMallocTrim(projectRoot, dir, { env: { ...env, CC: ' gcc -m64 ' }, headerDirs: [nodeHeaders] })).to.deep.equal({
      skipped: 'gcc -m64 could not compile node/core/malloc-trim.c: gcc was asked: -m64',
    })
    expect(await compileMallocTrim(projectRoot, dir, { env: { ...env, CC: 'clang-from-env' }, headerDirs: [nodeHeaders] })).to.deep.equal({
      skipped: 'no C compiler to compile node/core/malloc-trim.c (looked for clang-from-env)',
    })
    // npm's nodedir, when npm runs the build, is where the headers are looked for first.
    const npmHeaders = join(dir, 'npm-node', 'include', 'node')
    mkdirSync(npmHeaders, { recursive: true })
    writeFileSync(join(npmHeaders, 'node_api.h'), '#error "the header of npm\'s nodedir"\n')
    const fromNpm = await compileMallocTrim(projectRoot, dir, { env: { ...process.env, CC: undefined, npm_config_nodedir: join(dir, 'npm-node') } })
    expect(fromNpm).to.have.property('skipped').that.includes("the header of npm's nodedir")
    // `false` exits 1 and prints nothing: the error's own message stands in.
    const failing = await compileMallocTrim(projectRoot, dir, { compiler: 'false', headerDirs: [nodeHeaders] })
    expect(failing).to.have.property('skipped').that.matches(/^false could not compile node\/core\/malloc-trim\.c: Command failed: false /)
  })
})
