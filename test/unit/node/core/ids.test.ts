import { expect } from 'chai'
import { isUuid, parseAddress, parseHash, parseUuid } from '../../../../node/core/ids.js'

const UUID = '4a1c8a3e-0b5f-4c1e-9d2a-7f3e5b6c8d9e'
const HASH = '19b76a907de50cf4472aeca0745bcdb7ab7b98e88b66e457351029178e3bb8f6'

describe('ids and hashes from callers', () => {
  it('takes the stored form as it is and normalises the others (any case; a hash with 0x)', () => {
    expect(parseUuid(UUID)).to.equal(UUID)
    expect(parseUuid(UUID.toUpperCase())).to.equal(UUID)
    expect(isUuid(UUID.toUpperCase())).to.equal(true)
    expect(parseHash(HASH)).to.equal(HASH)
    expect(parseHash(HASH.toUpperCase())).to.equal(HASH)
    expect(parseHash(`0x${HASH}`)).to.equal(HASH)
    expect(parseHash(`0X${HASH.toUpperCase()}`)).to.equal(HASH)
  })

  it('refuses what is not one, naming the field', () => {
    for (const bad of [undefined, null, 42, '', `${UUID}0`, UUID.slice(1), ` ${UUID}`, UUID.replace(/-/g, ''), `{${UUID}}`]) {
      expect(() => parseUuid(bad, 'header.id'), String(bad)).to.throw(/^header\.id is not a valid UUID/).with.property('code', 'INVALID_ID')
      expect(isUuid(bad), String(bad)).to.equal(false)
    }
    for (const bad of [undefined, 7, '', HASH.slice(1), `${HASH}0`, `0x${HASH}0`, `00${HASH.slice(2)}g`, `0x0x${HASH}`, `${HASH.slice(0, 63)}\n`]) {
      expect(() => parseHash(bad, 'header.datahash'), String(bad)).to.throw(/^header\.datahash is not a 32-byte hex hash/).with.property('code', 'INVALID_FIELD')
    }
  })

  it('takes an Ethereum address in any case, lowercased, and refuses anything else naming the field', () => {
    expect(parseAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')).to.equal('0x5fbdb2315678afecb367f032d93f642f64180aa3')
    for (const bad of [undefined, 0x12, '', '5fbdb2315678afecb367f032d93f642f64180aa3', '0x5fbdb2315678afecb367f032d93f642f64180aa']) {
      expect(() => parseAddress(bad, 'key'), String(bad)).to.throw(/^key is not an Ethereum address/).with.property('code', 'INVALID_FIELD')
    }
  })
})
