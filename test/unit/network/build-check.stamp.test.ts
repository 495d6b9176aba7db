import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BUILD_FORMAT, currentBuildId, hashOf, stampFileOf } from '../../../network/build-check.mjs'

/** Whether a build is current, from its stamp, on a scratch project root: every reason to compile again. */
describe('network/build-check: the current build, by its stamp', () => {
  const ESBUILD = '0.0.0-test'
  const ID = '0123456789abcdef'
  let root: string

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'build-check-'))
    writeFileSync(join(root, 'a.ts'), 'export const a = 1\n')
    mkdirSync(join(root, '.build', ID), { recursive: true })
    writeFileSync(join(root, '.build', ID, 'node.js'), '')
  })

  afterEach(() => rmSync(root, { recursive: true, force: true }))

  const stamp = (patch: Record<string, unknown> = {}): Record<string, unknown> => ({ format: BUILD_FORMAT, esbuild: ESBUILD, id: ID, inputs: { 'a.ts': hashOf(join(root, 'a.ts')) }, outputs: ['node.js'], ...patch })
  const writeStamp = (value: unknown): void => writeFileSync(stampFileOf(root), typeof value === 'string' ? value : JSON.stringify(value))

  it('is the stamp\'s build when its inputs are unchanged and its outputs all there', () => {
    writeStamp(stamp())
    expect(currentBuildId(root, ESBUILD)).to.equal(ID)
  })

  it('is none without a stamp, or with one that cannot be read as a stamp of this format and esbuild', () => {
    expect(currentBuildId(root, ESBUILD)).to.equal(undefined)
    for (const bad of ['{not json', null, 42, stamp({ format: -1 }), stamp({ esbuild: '9.9.9' }), stamp({ id: 'ZZ' }), stamp({ id: 7 }), stamp({ inputs: 'a.ts' }), stamp({ outputs: 'node.js' })]) {
      writeStamp(bad)
      expect(currentBuildId(root, ESBUILD), JSON.stringify(bad)).to.equal(undefined)
    }
  })

  it('is none once an input changed or went, or an output is missing', () => {
    writeStamp(stamp())
    writeFileSync(join(root, 'a.ts'), 'export const a = 2\n')
    expect(currentBuildId(root, ESBUILD)).to.equal(undefined)
    writeStamp(stamp({ inputs: { 'gone.ts': 'x' } }))
    expect(currentBuildId(root, ESBUILD)).to.equal(undefined)
    writeStamp(stamp({ inputs: {}, outputs: ['node.js', 'chain.js'] }))
    expect(currentBuildId(root, ESBUILD)).to.equal(undefined)
    writeStamp(stamp({ inputs: {}, outputs: ['node.js', 3] }))
    expect(currentBuildId(root, ESBUILD)).to.equal(undefined)
    expect(hashOf(join(root, 'gone.ts'))).to.equal(undefined)
  })
})
