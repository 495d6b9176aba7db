import { expect } from 'chai'
import { networkCommand } from '../../../network/command-line.js'

describe('network/command-line.ts: the command a hint names', () => {
  it('in a working copy, npm\'s scripts (this one is)', () => {
    expect(networkCommand('up')).to.equal('npm run network:up --')
    expect(networkCommand('down')).to.equal('npm run network:down --')
    expect(networkCommand('resume')).to.equal('npm run network -- resume')
  })

  it('in an installed package, npx parley', () => {
    expect(networkCommand('up', true)).to.equal('npx parley up')
    expect(networkCommand('restart', true)).to.equal('npx parley restart')
  })
})
