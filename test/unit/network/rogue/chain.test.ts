import { expect } from 'chai'
import { layout } from '../../../../network/layout.js'
import { rogueKey } from '../../../../network/rogue/chain.js'

describe('network/rogue/chain: the keys a hostile transaction is signed with', () => {
  const L = layout('/nonexistent')

  it("Hardhat's account N is derived from Hardhat's public mnemonic (#15 is the issue's 0xcd3b…)", async () => {
    expect((await rogueKey(L, 'http://127.0.0.1:1', { account: 0 })).address).to.equal('0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266')
    const k = await rogueKey(L, 'http://127.0.0.1:1', { account: 15 })
    expect(k.address).to.equal('0xcd3b766ccdd6ae721141f452c550ca635964ce71')
    expect(k.label).to.equal('Hardhat account #15')
  })

  it('refuses an account Hardhat does not fund', async () => {
    let err: unknown
    await rogueKey(L, 'http://127.0.0.1:1', { account: 20 }).catch((e: unknown) => (err = e))
    expect(String(err)).to.match(/0 to 19 \(got 20\)/)
  })
})
