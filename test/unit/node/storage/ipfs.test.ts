import { expect } from 'chai'
import { createIpfsStorage } from '../../../../node/storage/ipfs.js'
import type { SharedStorage } from '../../../../node/storage/shared-storage.js'
import { ScriptedServer } from '../../../support/scripted-server.js'

const CID_V0 = 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o'
const CID_V1 = 'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi'

/**
 * The IPFS storage against loopback servers playing Kubo's API and gateway: what a probe makes of each answer, the
 * watch's two log lines, and how a download names a gateway's refusal.
 */
describe('storage: IPFS client', () => {
  let api: ScriptedServer
  let gateway: ScriptedServer
  let storage: SharedStorage
  let lines: string[]

  before(async () => {
    api = await ScriptedServer.start()
    gateway = await ScriptedServer.start()
  })
  after(async () => {
    await api.stop()
    await gateway.stop()
  })
  beforeEach(() => {
    lines = []
    api.requests.length = 0
    gateway.requests.length = 0
    storage = createIpfsStorage({ api: api.url, gateway: gateway.url, log: (l) => lines.push(l) })
  })
  afterEach(() => storage.stop())

  const version = (body: string, status = 200) => {
    api.handler = (req, res) => {
      if (req.method !== 'POST' || req.url !== '/api/v0/version') return res.writeHead(405).end()
      res.writeHead(status).end(body)
    }
  }
  async function read(ref: string, signal?: AbortSignal): Promise<string> {
    let text = ''
    for await (const c of storage.download(ref, signal)) text += Buffer.from(c).toString()
    return text
  }
  const failure = (p: Promise<unknown>): Promise<Error> =>
    p.then(
      () => {
        throw new Error('expected a rejection')
      },
      (e: unknown) => e as Error,
    )

  it('reports an API that does not answer within the probe\'s time', async () => {
    api.handler = () => {}
    expect((await storage.probe()).error).to.equal(`cannot reach IPFS API ${api.url}: no answer within 2000 ms`)
  })
})
