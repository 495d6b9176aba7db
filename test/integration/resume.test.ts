import { expect } from 'chai'
import { rmSync } from 'node:fs'
import { startNetwork, stopNetwork } from '../../network/network.js'
import { tempDir } from '../support/network.js'

/** Members registered on chain cannot be taken back, so resuming a network must never add any by itself. */
describe('resuming a network', function () {
  this.timeout(120_000)
  const dir = tempDir('resume')

  after(async () => {
    await stopNetwork(dir)
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps the members it has when no member count is given, and grows only when one is', async () => {
    const first = await startNetwork({ dir, members: 1 })
    expect(first.description.members.map((m) => m.org)).to.deep.equal(['org0'])
    await first.stop()

    const resumed = await startNetwork({ dir })
    expect(resumed.description.members.map((m) => m.org)).to.deep.equal(['org0'])
    await resumed.stop()

    const grown = await startNetwork({ dir, members: 2 })
    expect(grown.description.members.map((m) => m.org)).to.deep.equal(['org0', 'org1'])
    await grown.stop()
  })
})
