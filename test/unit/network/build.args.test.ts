import { expect } from 'chai'
import { join, resolve } from 'node:path'
import { ensureBuild } from '../../../network/build.js'
import { CURRENT_BUILD_ENV } from '../../../network/build-check.mjs'
import { projectRoot } from '../../../network/process.js'

/**
 * How a program of a build is started: from its bundle with its V8 flags, or, under `npm run coverage` (which sets
 * NODE_V8_COVERAGE), from its TypeScript sources. The build is the one the launcher named (CURRENT_BUILD_ENV), so
 * nothing is compiled here; both forms are asked for by setting the variable coverage reads, restored after.
 */
describe('network/build: the command line of a program of a build', () => {
  const saved = { build: process.env[CURRENT_BUILD_ENV], coverage: process.env.NODE_V8_COVERAGE }
  const dir = resolve('/tmp/parley-build-args-test')

  beforeEach(() => {
    process.env[CURRENT_BUILD_ENV] = dir
  })

  afterEach(() => {
    for (const [name, value] of [[CURRENT_BUILD_ENV, saved.build], ['NODE_V8_COVERAGE', saved.coverage]] as const) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })

  it('runs each bundle with its flags, the chain with its Hardhat config, a node with the console and its database template', async () => {
    process.env.NODE_V8_COVERAGE = ''
    const b = await ensureBuild()
    expect([b.dir, b.compiled]).to.deep.equal([dir, false])
    const node = b.nodeArgs('node', ['--config', 'c.json'], '/cache')
    expect(node).to.include('--expose-gc')
    expect(node.slice(node.indexOf(join(dir, 'node.js')))).to.deep.equal([join(dir, 'node.js'), '--config', 'c.json', '--ui-dir', join(dir, 'ui'), '--db-template', join(dir, 'new-member.sqlite')])
    expect(b.nodeArgs('chain', ['--port', '1'])).to.deep.equal([join(dir, 'chain.js'), '--port', '1', '--hardhat-config', join(dir, 'hardhat.config.cjs')])
    expect(b.nodeArgs('ipfs')).to.deep.equal(['--interrupt-budget=540672', join(dir, 'ipfs.js')])
    // A working copy's programs keep their caches in the build: nothing to add to their environment.
    expect(b.programEnv('/cache')).to.deep.equal({})
  })

  it('under coverage, runs the TypeScript sources through tsx, a node still with its console and template', async () => {
    process.env.NODE_V8_COVERAGE = '/tmp/coverage-raw'
    const b = await ensureBuild()
    expect(b.nodeArgs('chain', ['--port', '1'])).to.deep.equal(['--import', 'tsx', join(projectRoot, 'network/chain/main.ts'), '--port', '1'])
    expect(b.nodeArgs('node', ['--config', 'c.json'])).to.deep.equal([
      '--import',
      'tsx',
      join(projectRoot, 'node/main.ts'),
      '--config',
      'c.json',
      '--ui-dir',
      join(dir, 'ui'),
      '--db-template',
      join(dir, 'new-member.sqlite'),
    ])
  })
})
