import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { Transaction, Wallet, keccak256 } from 'ethers'
import { signEip1559, unsignedHashEip1559, type Eip1559Tx } from '../../../../node/chain/tx-encode.js'

const wallet = new Wallet('0x' + '4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318')
const to = '0x' + 'cf7ed3acca5a467e9e704c703e8d87f634fb0fc9'

function tx(over: Partial<Eip1559Tx> = {}): Eip1559Tx {
  return { chainId: 31337n, nonce: 7, maxPriorityFeePerGas: 1_000_000_000n, maxFeePerGas: 2_875_000_000n, gasLimit: 180_000n, to, value: 0n, data: randomBytes(100), ...over }
}

/** ethers' own signing of the same fields: the reference, byte for byte. */
async function reference(t: Eip1559Tx): Promise<{ raw: string; hash: string; unsignedHash: string }> {
  const like = { type: 2, chainId: t.chainId, nonce: t.nonce, maxPriorityFeePerGas: t.maxPriorityFeePerGas, maxFeePerGas: t.maxFeePerGas, gasLimit: t.gasLimit, to: t.to, value: t.value, data: '0x' + Buffer.from(t.data).toString('hex') }
  const raw = await wallet.signTransaction(like)
  return { raw, hash: Transaction.from(raw).hash!, unsignedHash: Transaction.from(like).unsignedHash }
}

describe('EIP-1559 signing with Buffers', () => {
  const cases: Array<[string, Partial<Eip1559Tx>]> = [
    ['a typical pinBatch', {}],
    ['nonce 0, zero fees and gas, empty data', { nonce: 0, maxPriorityFeePerGas: 0n, maxFeePerGas: 0n, gasLimit: 0n, data: new Uint8Array(0) }],
    ['fees and value at 2^256 - 1', { maxPriorityFeePerGas: (1n << 256n) - 1n, maxFeePerGas: (1n << 256n) - 1n, value: (1n << 256n) - 1n }],
    ['fees of odd hex length', { maxPriorityFeePerGas: 0xabcn, maxFeePerGas: 0x1_0000_0000n, gasLimit: 0x10n }],
    ['a large nonce and chain id', { nonce: Number.MAX_SAFE_INTEGER, chainId: (1n << 64n) + 3n }],
    ['a contract creation', { to: null, data: randomBytes(3000), value: 1n }],
    ['one data byte below 0x80 (RLP encodes it as itself)', { data: Uint8Array.of(0x7f) }],
    ['one data byte from 0x80', { data: Uint8Array.of(0x80) }],
    ['one zero data byte', { data: Uint8Array.of(0) }],
    ['55 data bytes (the last short RLP string)', { data: randomBytes(55) }],
    ['56 data bytes', { data: randomBytes(56) }],
    ['a 200-context pinBatch (about 6.6 kB)', { data: randomBytes(4 + 32 * 207) }],
    ['over 64 KiB of data (a three-byte length)', { data: randomBytes(70_000) }],
    ['an upper-case address', { to: '0x' + 'CF7ED3ACCA5A467E9E704C703E8D87F634FB0FC9' }],
    ['a data view into a larger buffer', { data: randomBytes(300).subarray(17, 217) }],
  ]
  for (const [what, over] of cases) {
    it(`equals ethers' signed bytes and hash: ${what}`, async () => {
      const t = tx(over)
      const ref = await reference(t)
      const mine = signEip1559(wallet.signingKey, t)
      expect(unsignedHashEip1559(t)).to.equal(ref.unsignedHash)
      expect(mine.raw).to.equal(ref.raw)
      expect(mine.hash).to.equal(ref.hash)
      expect(mine.hash).to.equal(keccak256(mine.raw))
    })
  }

  it('equals ethers when r or s has leading zero bytes (stripped in RLP)', async () => {
    // About one signature in 128 has one: search nonces for them, then compare those with ethers.
    let found = 0
    for (let nonce = 0; nonce < 3000 && found < 2; nonce++) {
      const t = tx({ nonce, data: Uint8Array.of(1, 2, 3) })
      const sig = wallet.signingKey.sign(unsignedHashEip1559(t))
      if (!sig.r.startsWith('0x00') && !sig.s.startsWith('0x00')) continue
      found++
      expect(signEip1559(wallet.signingKey, t).raw).to.equal((await reference(t)).raw)
    }
    expect(found).to.equal(2)
  })

  it('refuses what cannot be encoded', () => {
    expect(() => signEip1559(wallet.signingKey, tx({ maxFeePerGas: 1n << 256n }))).to.throw(RangeError)
    expect(() => signEip1559(wallet.signingKey, tx({ value: -1n }))).to.throw(RangeError)
    expect(() => signEip1559(wallet.signingKey, tx({ nonce: 1.5 }))).to.throw(RangeError)
    expect(() => signEip1559(wallet.signingKey, tx({ to: '0x1234' }))).to.throw(TypeError)
  })
})
