import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { projectRoot, tsEntry } from '../../../../network/process.js'

const run = (args: string[]): Promise<{ code: number; out: string; err: string }> =>
  promisify(execFile)(process.execPath, tsEntry('network/hosts/node-command.ts', args), { cwd: projectRoot }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout, err: stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  )

describe('npm run node -- init (the command)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-node-command-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('writes the member and says what to fund and run (its checks: member-init.test.ts)', async () => {
    const config = join(dir, 'm', 'member.json')
    const args = ['init', '--config', config, '--org', 'acme', '--host', '127.0.0.3', '--chain', 'http://127.0.0.1:8545', '--contract', `0x${'12'.repeat(20)}`, '--ipfs', 'http://127.0.0.1:5001', '--ipfs-gateway', 'http://127.0.0.1:8080']
    const ok = await run(args)
    expect(ok.code, ok.err).to.equal(0)
    expect(ok.out).to.match(new RegExp(`wrote ${config} \\(API http://127\\.0\\.0\\.3:5000, p2p https://127\\.0\\.0\\.3:3001\\)`))
    expect(ok.out).to.match(/signing address 0x[0-9a-f]{40}: fund it on the chain before the first start \(on a local chain: npm run chain -- fund --rpc http:\/\/127\.0\.0\.1:8545 --to 0x[0-9a-f]{40}\)/)
    expect(ok.out).to.contain(`then: npm run node -- --config ${config}`)
    expect(existsSync(join(dir, 'm', 'tls', 'cert.pem'))).to.equal(true)
  })
})
