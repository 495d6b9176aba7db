import { createServer, type Server } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { assertPortFree } from '../../../network/process.js'
import type { NodeConfig } from '../../../node/config.js'
import { acquireLock } from '../../../node/db/lock.js'
import { startNode } from '../../../node/node.js'
import { loneNodeConfig, loneNodeTls } from '../../support/lone-node.js'

/**
 * startNode's phases and its stop-on-failure paths, in one process: a node whose chain and IPFS are unreachable
 * still starts (it waits for them quietly), so what a failed phase leaves behind can be checked here.
 */
describe('node start-up phases', function () {
  this.timeout(60_000)
  let root: string
  let tls: { cert: string; key: string }
  const lines: string[] = []
  const log = (line: string): void => {
    lines.push(line)
  }

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'parley-node-start-'))
    tls = await loneNodeTls(root)
  })
  after(() => rm(root, { recursive: true, force: true }))

  const config = (name: string, change: Partial<NodeConfig> = {}): Promise<NodeConfig> => loneNodeConfig(join(root, name), tls, change)

  /** The database folder can be locked again: whoever had it open closed it. */
  async function folderFree(cfg: NodeConfig): Promise<void> {
    await (await acquireLock(join(cfg.dataDir, 'db'))).release()
  }

  it('starts, serves its API and p2p ports, and stops, leaving its ports and folder free', async () => {
    const cfg = await config('runs')
    const node = await startNode(cfg, log)
    try {
      const res = await fetch(`${node.api}/api/v1/namespaces/default/messages`)
      expect(res.status).to.equal(200)
      expect(await res.json()).to.deep.equal([])
      expect(node.p2p).to.equal(`https://127.0.0.1:${cfg.p2p.port}`)
    } finally {
      await node.stop()
    }
    await assertPortFree(cfg.api.port, 'api')
    await assertPortFree(cfg.p2p.port, 'p2p')
    await folderFree(cfg)
  })

  it('closes the database when a plugin cannot be built (its TLS certificate is missing)', async () => {
    const cfg = await config('no-cert', {})
    cfg.p2p = { ...cfg.p2p, cert: join(root, 'missing.pem') }
    const err = await startNode(cfg, log).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(Error).with.property('code', 'ENOENT')
    await folderFree(cfg)
  })

  it('stops every component already started, and closes the database, when a later one cannot start', async () => {
    const cfg = await config('api-busy')
    const squatter: Server = createServer()
    await new Promise<void>((res) => squatter.listen(cfg.api.port, '127.0.0.1', res))
    try {
      const err = await startNode(cfg, log).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(Error).with.property('code', 'EADDRINUSE')
    } finally {
      await new Promise((res) => squatter.close(res))
    }
    // The p2p exchange had started (before the API): it no longer listens.
    await assertPortFree(cfg.p2p.port, 'p2p')
    await folderFree(cfg)
  })
})
