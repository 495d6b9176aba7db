import { expect } from 'chai'
import { HDNodeWallet } from 'ethers'
import { deriveHdPrivateKeys } from '../../../../network/chain/hd-accounts.js'

/** The chain's native derivation of Hardhat's accounts, against ethers' BIP32/BIP39 as the reference. */
describe('network/chain/hd-accounts: Hardhat\'s genesis keys from an HD config', () => {
  const HARDHAT = { mnemonic: 'test test test test test test test test test test test junk', path: "m/44'/60'/0'/0", initialIndex: 0, count: 2, passphrase: '' }

  const reference = (mnemonic: string, passphrase: string, path: string): string => HDNodeWallet.fromPhrase(mnemonic, passphrase, path).privateKey

  it('derives Hardhat\'s default accounts', () => {
    expect(deriveHdPrivateKeys(HARDHAT)).to.deep.equal(['0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'])
  })

  it('agrees with ethers for a passphrase, a later first index, a path with a trailing slash and unhardened levels', () => {
    const mnemonic = '  abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art '
    const keys = deriveHdPrivateKeys({ mnemonic, path: "m/44'/60'/7/1/", initialIndex: 5, count: 2, passphrase: 'TREZOR' })
    expect(keys).to.deep.equal([5, 6].map((i) => reference(mnemonic.trim(), 'TREZOR', `m/44'/60'/7/1/${i}`)))
  })

  it('leaves to Hardhat what it does not derive exactly as Hardhat does', () => {
    expect(deriveHdPrivateKeys({ ...HARDHAT, mnemonic: 'test test test test test test test test test test junk' })).to.equal(undefined)
    expect(deriveHdPrivateKeys({ ...HARDHAT, path: "m/44'/60'/x" })).to.equal(undefined)
    expect(deriveHdPrivateKeys({ ...HARDHAT, path: "44'/60'/0'/0" })).to.equal(undefined)
    // An index past BIP32's range of 2^32, hardened or not.
    expect(deriveHdPrivateKeys({ ...HARDHAT, path: 'm/4294967296' })).to.equal(undefined)
    expect(deriveHdPrivateKeys({ ...HARDHAT, path: "m/2147483648'" })).to.equal(undefined)
  })

  it('answers no keys for a count of none', () => {
    expect(deriveHdPrivateKeys({ ...HARDHAT, count: 0 })).to.deep.equal([])
  })
})
