import { expect } from 'chai'
import http from 'node:http'
import { connect } from 'node:net'
import { closeServer, listen } from '../../../../node/core/listen.js'
import { exchangeRoutes, BATCHES_PATH } from '../../../../node/exchange/routes.js'
import { PeerUsage } from '../../../../node/exchange/peer-usage.js'
import { RefusalLog } from '../../../../node/exchange/refusal-log.js'
import type { BatchPayload } from '../../../../node/model/index.js'
import type { Peer } from '../../../../node/exchange/types.js'
import { freePort } from '../../../../network/process.js'
import { waitUntil } from '../../../support/wait.js'

/** The exchange routes' hold on their org's in-flight share, over a real socket (the endpoint's TLS left out). */
describe('exchange routes: in-flight share', () => {
  it('holds a batch ticket until the handler is done, though the peer hung up after its last byte', async () => {
    const peer = { node: 'did:firefly:node/node1', org: 'org1' } as Peer
    const usage = new PeerUsage({ requestsPerOrg: 1, batchBytesPerOrg: 1024 * 1024 })
    let release: () => void = () => {}
    const handling = new Promise<void>((r) => (release = r))
    let reached = false
    const handler = exchangeRoutes({
      peerOf: () => peer,
      batchHandler: () => async () => {
        reached = true
        await handling
      },
      blobHandler: () => async () => {},
      parseBatch: (text) => JSON.parse(text) as BatchPayload,
      maxBatchBytes: 1024 * 1024,
      usage,
      refusals: new RefusalLog({ perMinute: 10, log: () => {} }),
      batchBodyMs: 10_000,
      log: () => {},
    })
    const server = http.createServer((req, res) => handler(req, res, { org: peer.org, cert: '', fingerprint: 'f' }))
    const port = await freePort()
    await listen(server, port, '127.0.0.1')
    const s = connect(port, '127.0.0.1')
    s.on('error', () => {})
    try {
      const body = JSON.stringify({ id: 'b1' })
      s.write(`POST ${BATCHES_PATH} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
      await waitUntil('the batch reaches its handler', () => reached, { intervalMs: 5 })
      const closed = new Promise((r) => s.once('close', r))
      s.destroy()
      await closed
      await new Promise((r) => setTimeout(r, 50))
      expect(usage.admit(peer.org, peer.node), 'the org still has its one request in flight').to.be.a('string').and.include('quotas.inFlightRequestsPerOrg')
      release()
      await waitUntil('the ticket is given back once the handler is done', () => {
        const ticket = usage.admit(peer.org, peer.node)
        if (typeof ticket === 'string') return false
        ticket.release()
        return true
      }, { intervalMs: 5 })
    } finally {
      release()
      s.destroy()
      await closeServer(server)
    }
  })
})
