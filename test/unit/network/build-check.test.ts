import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PACKAGED_BUILD_DIR, PACKAGED_BUILD_FILE, packagedBuild } from '../../../network/build-check.mjs'

describe('network/build-check.mjs: the build of an installed package', () => {
  let root: string
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'parley-packaged-'))
    mkdirSync(join(root, 'dist', 'build'), { recursive: true })
  })
  afterEach(() => rmSync(root, { recursive: true, force: true }))

  it('is dist/build, with the id dist/build.json names, where there are no sources', () => {
    writeFileSync(join(root, PACKAGED_BUILD_FILE), JSON.stringify({ id: '0123456789abcdef' }))
    expect(packagedBuild(root)).to.deep.equal({ id: '0123456789abcdef', dir: join(root, PACKAGED_BUILD_DIR) })
  })

  it('is none in a working copy, whose sources build their own (a dist/ left by npm pack is ignored)', () => {
    writeFileSync(join(root, PACKAGED_BUILD_FILE), JSON.stringify({ id: '0123456789abcdef' }))
    mkdirSync(join(root, 'network'))
    writeFileSync(join(root, 'network', 'build.ts'), '')
    expect(packagedBuild(root)).to.equal(undefined)
  })

  it('is none without a readable id', () => {
    expect(packagedBuild(root)).to.equal(undefined)
    writeFileSync(join(root, PACKAGED_BUILD_FILE), JSON.stringify({ id: '../elsewhere' }))
    expect(packagedBuild(root)).to.equal(undefined)
  })
})
