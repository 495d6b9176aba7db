import { expect } from 'chai'
import type { Metafile } from 'esbuild'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { externalImports, placeBuild } from '../../../network/build.js'
import { MALLOC_TRIM_FILE } from '../../../node/core/malloc-trim.js'

describe('network build: what its bundles load from node_modules', () => {
  it('lists packages, and neither Node modules nor URLs such as the data: images a bundled stylesheet names', () => {
    const imp = (path: string) => ({ path, kind: 'import-statement' as const, external: true })
    const metafile: Metafile = {
      inputs: {},
      outputs: {
        'node.js': { bytes: 1, inputs: {}, exports: [], imports: [imp('sql.js'), imp('node:fs'), imp('fs'), imp('hardhat/config.js'), { path: 'inlined', kind: 'import-statement', external: false }] },
        'ui/api.css': { bytes: 1, inputs: {}, exports: [], imports: [imp('data:image/png;base64,iVBOR'), imp('data:image/svg+xml;charset=utf-8,<svg/>'), imp('https://example.com/x.css')] },
      },
    }
    expect(externalImports(metafile)).to.deep.equal(['sql.js', 'hardhat/config.js'])
  })
})

describe('network build: a compiled build put in its place', () => {
  let root: string
  beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'parley-place-build-'))))
  afterEach(() => rmSync(root, { recursive: true, force: true }))
  const made = (name: string, files: string[]): string => {
    const d = join(root, name)
    mkdirSync(d)
    for (const f of files) writeFileSync(join(d, f), `${name}'s ${f}`)
    return d
  }

  it('takes the place when it is free', () => {
    const tmp = made('tmp-1', ['node.js', MALLOC_TRIM_FILE])
    placeBuild(tmp, join(root, 'id'))
    expect(readdirSync(join(root, 'id')).sort()).to.deep.equal([MALLOC_TRIM_FILE, 'node.js'])
    expect(existsSync(tmp)).to.equal(false)
  })

  it('keeps a build already there, adding the native module it lacks (made where no compiler was) and no other file', () => {
    const dir = made('id', ['node.js'])
    placeBuild(made('tmp-1', ['node.js', MALLOC_TRIM_FILE]), dir)
    expect(readFileSync(join(dir, 'node.js'), 'utf8')).to.equal("id's node.js")
    expect(readFileSync(join(dir, MALLOC_TRIM_FILE), 'utf8')).to.equal(`tmp-1's ${MALLOC_TRIM_FILE}`)
    placeBuild(made('tmp-2', ['node.js', MALLOC_TRIM_FILE]), dir)
    expect(readFileSync(join(dir, MALLOC_TRIM_FILE), 'utf8'), 'one it has stays').to.equal(`tmp-1's ${MALLOC_TRIM_FILE}`)
    placeBuild(made('tmp-3', ['node.js']), dir)
    expect(readdirSync(root)).to.deep.equal(['id'])
  })

  it('throws what is not a build in the way', () => {
    const tmp = made('tmp-1', ['node.js'])
    expect(() => placeBuild(tmp, join(root, 'no-such-parent', 'id'))).to.throw(/ENOENT/)
  })
})
