import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { resolveVerifierRef, verifierHash } from '../../../../node/identity/verifiers.js'

const resolve = (body: unknown) => resolveVerifierRef(parseJsonRaw(JSON.stringify(body)))
const code = (f: () => unknown): string | undefined => {
  try {
    f()
  } catch (err) {
    return isParleyError(err) ? err.code : 'not a ParleyError'
  }
  return undefined
}

describe('identity: verifiers', () => {
  it("hashes a verifier as FireFly's Verifier.Seal: sha256 of namespace, type and value, concatenated", () => {
    const expected = createHash('sha256').update('svc_systemethereum_address0xabc').digest('hex')
    expect(verifierHash('svc_system', 'ethereum_address', '0xabc')).to.equal(expected)
  })

  it('resolves an Ethereum address in any form to the lowercase 0x form, with the chain verifier type', () => {
    const lower = '0x' + 'ab'.repeat(20)
    for (const value of [lower, lower.toUpperCase().replace('0X', '0x'), 'ab'.repeat(20), 'AB'.repeat(20)]) {
      expect(resolve({ value })).to.deep.equal({ type: 'ethereum_address', value: lower })
    }
    expect(resolve({ type: 'ethereum_address', value: lower })).to.deep.equal({ type: 'ethereum_address', value: lower })
    expect(resolve({ type: '', value: lower }).type).to.equal('ethereum_address')
  })

  it('refuses another verifier type, a value that is not an address, and a body that is not an object', () => {
    expect(code(() => resolve({ type: 'dx_peer_id', value: '0x' + 'ab'.repeat(20) }))).to.equal('INVALID_FIELD')
    for (const value of ['', '0x' + 'ab'.repeat(19), '0x' + 'zz'.repeat(20), 'org0']) expect(code(() => resolve({ value })), value).to.equal('INVALID_FIELD')
    expect(code(() => resolve({}))).to.equal('INVALID_FIELD')
    expect(code(() => resolve('0xab'))).to.equal('INVALID_FIELD')
  })
})
