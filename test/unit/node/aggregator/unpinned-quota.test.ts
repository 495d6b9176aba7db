import { expect } from 'chai'
import { isParleyError } from '../../../../node/core/errors.js'
import { batchCharge, MIN_BATCH_CHARGE_BYTES, UnpinnedBatchQuota } from '../../../../node/aggregator/unpinned-quota.js'

describe('the quota on private batches no pin names yet', () => {
  const KiB = 1024
  const batch = (n: number, key = '0xk') => ({ id: `b${n}`, hash: `h${n}`, key })
  const quota = (limitKiB: number, stored: { org: string; n: number; bytes: number }[] = []) =>
    new UnpinnedBatchQuota(
      { limitBytes: limitKiB * KiB, keepMs: 120_000 },
      stored.map((s) => ({ ...batch(s.n), org: s.org, bytes: s.bytes })),
    )
  const refusal = (f: () => unknown): Error => {
    try {
      f()
    } catch (err) {
      expect(isParleyError(err, 'STORAGE_FULL'), String(err)).to.equal(true)
      return err as Error
    }
    throw new Error('not refused')
  }

  it('charges a batch its manifest and values in UTF-8 bytes, at least the minimum', () => {
    expect(batchCharge('{}', [{ value: null }])).to.equal(MIN_BATCH_CHARGE_BYTES)
    const big = 'é'.repeat(5000)
    expect(batchCharge('{"m":1}', [{ value: big }, { value: '"x"' }])).to.equal(7 + 10_000 + 3)
  })

  it('counts per org what is stored and being stored; past the limit it refuses, naming the quota and the expiry readably', () => {
    const q = quota(16, [
      { org: 'org1', n: 1, bytes: 10 * KiB },
      { org: 'org2', n: 2, bytes: 100 },
    ])
    expect(q.usedBy('org1')).to.equal(10 * KiB)
    expect(q.usedBy('org2'), 'counted at the minimum').to.equal(MIN_BATCH_CHARGE_BYTES)
    q.reserve('org1', batch(3), 6 * KiB)
    const err = refusal(() => q.reserve('org1', batch(4), 1))
    expect(err.message).to.contain('org org1 already has 16384 bytes').and.contain('quotas.unpinnedBatchBytesPerOrg').and.contain('deleted after 2 min without one (quotas.unpinnedBatchMs)')
    // Another org, and the same batch again (counted already), are not refused.
    q.reserve('org2', batch(5), 12 * KiB)
    q.reserve('org1', batch(3), 6 * KiB)
    expect(q.usedBy('org1')).to.equal(16 * KiB)
  })

  it('a pin of the batch’s own key, the expiry passing it, or a failed store gives its share back, once', () => {
    const q = quota(64, [{ org: 'org1', n: 1, bytes: 8 * KiB }])
    const release = q.reserve('org1', batch(2), 8 * KiB)
    q.pinned('b1', 'h1', '0xother')
    q.pinned('b1', 'h9', '0xk')
    expect(q.usedBy('org1'), 'another signer, or another hash, frees nothing').to.equal(16 * KiB)
    q.pinned('b1', 'h1', '0xk')
    expect(q.usedBy('org1')).to.equal(8 * KiB)
    release()
    release()
    expect(q.usedBy('org1')).to.equal(0)
    const again = q.reserve('org1', batch(3), 8 * KiB)
    q.forget('b3', 'h3')
    expect(q.usedBy('org1')).to.equal(0)
    // Pinned while being stored, then its store failed: given back once, not twice.
    const r4 = q.reserve('org1', batch(4), 8 * KiB)
    q.reserve('org1', batch(5), 4 * KiB)
    q.pinned('b4', 'h4', '0xk')
    r4()
    again()
    expect(q.usedBy('org1')).to.equal(4 * KiB)
  })
})
