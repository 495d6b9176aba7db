import { expect } from 'chai'
import { createServer } from 'node:net'
import { assertPortFree, freePort, PortBusyError } from '../../../network/process.js'

describe('process helpers', () => {
  it('names a busy port', async () => {
    const port = await freePort()
    const srv = createServer().listen(port, '127.0.0.1')
    await new Promise((r) => srv.once('listening', r))
    try {
      const err = await assertPortFree(port, 'test').then(() => null, (e: unknown) => e)
      expect(err).to.be.instanceOf(PortBusyError)
      expect((err as Error).message).to.contain(String(port))
    } finally {
      srv.close()
    }
  })
})
