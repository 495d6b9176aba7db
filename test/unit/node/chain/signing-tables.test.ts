import { expect } from 'chai'
import { createRequire } from 'node:module'
import { SigningKey, Wallet } from 'ethers'
import { useSmallSigningTables } from '../../../../node/chain/signing-tables.js'

describe('chain: the smaller secp256k1 tables a member signs with', function () {
  it('give the same address and the same (deterministic, RFC 6979) signature as ethers with its default tables', function () {
    useSmallSigningTables()
    // Computed by ethers 6.17 with noble's default 8-bit windows, in a process that never changed them.
    const key = new SigningKey(`0x${'4c'.repeat(32)}`)
    const sig = key.sign(`0x${'a1'.repeat(32)}`)
    expect({ r: sig.r, s: sig.s, yParity: sig.yParity }).to.deep.equal({
      r: '0x5eaf33e453edfb7ac2b132ced9389a730d77642aa5e6eb912801051dc30cde29',
      s: '0x4bc8daca92c32f1ba65e9e823eaeafbc81d163053f2ab671195710cd67ae6bca',
      yParity: 1,
    })
    expect(new Wallet(key.privateKey).address).to.equal('0xdB00079cad3e665853Bf766eFe26F4C38cdbdCDA')
    expect(SigningKey.recoverPublicKey(`0x${'a1'.repeat(32)}`, sig)).to.equal(key.publicKey)
  })

  it('are set on the curve module ethers itself signs with (one copy of @noble/curves, not a second nested under ethers)', function () {
    const fromProject = createRequire(import.meta.url)
    const fromEthers = createRequire(fromProject.resolve('ethers'))
    expect(fromEthers.resolve('@noble/curves/secp256k1')).to.equal(fromProject.resolve('@noble/curves/secp256k1'))
  })
})
