import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import { createNodeCertificate } from '../../../network/tls.js'
import { freePort, projectRoot } from '../../../network/process.js'
import { programArgs } from '../../support/programs.js'
import { Broken, waitUntil } from '../../support/wait.js'
import type { NodeConfigFile } from '../../../node/config.js'
import { MALLOC_TRIM_FILE } from '../../../node/core/malloc-trim.js'
import { underCoverage } from '../../../network/build-check.mjs'

/**
 * A member whose log cannot be written (its disk is full: /dev/full answers every write with ENOSPC) must not die of
 * it. Writing through process.stdout turned that ENOSPC into an unheard 'error' event, which killed the process at
 * its first log line; the node's log now drops the line instead. A lone member (no chain, no IPFS: it logs that, and
 * retries) is started with its stdout on /dev/full, answers its API, and stops cleanly when told to. It runs from the
 * build, as a network runs node/main.ts (test/support/programs.ts): under tsx its start cost several times the CPU.
 */
describe('node entry: a log on a full disk, and malloc_trim', function () {
  this.timeout(60_000)
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-full-log-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('keeps the member running, dropping the lines it cannot write', async function () {
    const tls = await createNodeCertificate('fullog', 'fullognode')
    writeFileSync(join(dir, 'cert.pem'), tls.cert)
    writeFileSync(join(dir, 'key.pem'), tls.key)
    writeFileSync(join(dir, 'signing.key'), Wallet.createRandom().privateKey)
    const nowhere = `http://127.0.0.1:${await freePort()}`
    const apiPort = await freePort()
    const cfg: NodeConfigFile = {
      org: 'fullog',
      node: 'fullognode',
      signingKeyFile: 'signing.key',
      chain: { rpc: nowhere, contract: '0x' + '11'.repeat(20), firstBlock: 0 },
      ipfs: { api: nowhere, gateway: nowhere },
      api: { port: apiPort },
      p2p: { port: await freePort(), certFile: 'cert.pem', keyFile: 'key.pem' },
      dataDir: 'data',
    }
    writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg))

    const full = openSync('/dev/full', 'w')
    let stderr = ''
    let exited: number | null | undefined
    const child = spawn(process.execPath, await programArgs('node', ['--config', join(dir, 'config.json')]), { cwd: projectRoot, stdio: ['ignore', full, 'pipe'] })
    closeSync(full)
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()))
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve((exited = code))))
    try {
      const status = `http://127.0.0.1:${apiPort}/api/v1/status`
      await waitUntil('the member API', async () => {
        if (exited !== undefined) throw new Broken(`the member exited with ${exited}: ${stderr}`)
        return (await fetch(status)).ok
      }, { timeoutMs: 30_000 })
      // It has logged (and dropped) its start, its chain and IPFS problems by now; a second look later still finds it up.
      await new Promise((r) => setTimeout(r, 500))
      expect((await fetch(status)).ok).to.equal(true)
      expect(exited).to.equal(undefined)
      // A member of a build loads its malloc_trim at start (node/core/malloc-trim.ts); run from its sources, as under
      // `npm run coverage`, it has none.
      const maps = readFileSync(`/proc/${child.pid}/maps`, 'utf8')
      if (underCoverage()) expect(maps).to.not.include(MALLOC_TRIM_FILE)
      else expect(maps).to.include(MALLOC_TRIM_FILE)
    } finally {
      if (exited === undefined) child.kill('SIGTERM')
    }
    expect(await exit).to.equal(0)
    expect(stderr).to.not.match(/ENOSPC|Unhandled 'error' event/)
  })
})
