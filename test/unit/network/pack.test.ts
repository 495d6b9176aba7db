import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { declarationsReached, packageOf } from '../../../network/pack.js'

describe('network/pack.ts: the package a bundle loads', () => {
  it('names the package of a specifier, and nothing for Node\'s own modules or relative paths', () => {
    expect(packageOf('hardhat/config.js')).to.equal('hardhat')
    expect(packageOf('@nomicfoundation/hardhat-ethers')).to.equal('@nomicfoundation/hardhat-ethers')
    expect(packageOf('@nomicfoundation/hardhat-ethers/types')).to.equal('@nomicfoundation/hardhat-ethers')
    expect(packageOf('sql.js')).to.equal('sql.js')
    for (const own of ['node:fs', 'fs', 'crypto', 'fs/promises', './chunk-ABC.js', '../x.js', '/abs/path.js']) expect(packageOf(own), own).to.equal(undefined)
  })
})

describe('network/pack.ts: the declarations the entries reach', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-declarations-'))
    const files: Record<string, string> = {
      'network/index.d.ts': "export { a } from './a.js'\nexport type { B } from '../node/b.js'\n",
      'network/a.d.ts': "import type { C } from './c.mjs'\nexport declare const a: C\n",
      'network/c.d.mts': 'export type C = number\n',
      'node/b.d.ts': "export type B = import('./d.js').D\n",
      'node/d.d.ts': 'export type D = string\n',
      'node/unreached.d.ts': "import type { Koa } from 'koa'\nexport type U = Koa\n",
    }
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(join(dir, dirname(rel)), { recursive: true })
      writeFileSync(join(dir, rel), text)
    }
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('follows relative imports, .mjs to .d.mts and import() types included, and leaves the rest', () => {
    expect(declarationsReached(dir, ['network/index.d.ts'])).to.deep.equal(['network/a.d.ts', 'network/c.d.mts', 'network/index.d.ts', 'node/b.d.ts', 'node/d.d.ts'])
  })
})
