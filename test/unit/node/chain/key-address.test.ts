import { expect } from 'chai'
import { Transaction, Wallet } from 'ethers'
import { addressOfKey, keySigner } from '../../../../node/chain/key-address.js'

describe('chain: a key’s address and signer without the public key in JavaScript', function () {
  const keys = [`0x${'4c'.repeat(32)}`, `0x${'00'.repeat(31)}01`, '0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140']

  it('derives the address ethers derives, lowercase, with or without 0x', function () {
    for (const key of keys) {
      expect(addressOfKey(key)).to.equal(new Wallet(key).address.toLowerCase())
      expect(addressOfKey(key.slice(2))).to.equal(new Wallet(key).address.toLowerCase())
    }
  })

  it('refuses what is not a private key, as ethers does', function () {
    for (const bad of ['0x1234', `0x${'zz'.repeat(32)}`, `0x${'00'.repeat(32)}`, '0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141']) {
      expect(() => addressOfKey(bad), bad).to.throw()
      expect(() => new Wallet(bad), bad).to.throw()
    }
  })

  it('signs as a Wallet does: the same checksummed address, EIP-1559 signature and legacy transaction', async function () {
    const key = keys[0]!
    const wallet = new Wallet(key)
    const signer = keySigner(key)
    expect(signer.address).to.equal(wallet.address)
    const digest = `0x${'a1'.repeat(32)}`
    expect(signer.signingKey.sign(digest).serialized).to.equal(wallet.signingKey.sign(digest).serialized)
    const legacy = { type: 0, chainId: 31337n, nonce: 3, to: wallet.address, gasPrice: 1_000_000_000n, gasLimit: 21_000n, value: 1n, data: '0x' }
    const raw = await signer.signTransaction(legacy)
    expect(raw).to.equal(await wallet.signTransaction(legacy))
    expect(Transaction.from(raw).from).to.equal(wallet.address)
  })
})
