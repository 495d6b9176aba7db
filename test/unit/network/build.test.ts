import { expect } from 'chai'
import type { Metafile } from 'esbuild'
import { externalImports } from '../../../network/build.js'

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
