import { expect } from 'chai'
import { join } from 'node:path'
import { isParleyError } from '../../../../node/core/errors.js'
import { batchCharge, MIN_BATCH_CHARGE_BYTES } from '../../../../node/aggregator/unpinned-quota.js'
import { UnpinnedExpiry } from '../../../../node/aggregator/unpinned-expiry.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { newId, type DataId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Database } from '../../../../node/db/database.js'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import type { BatchPayload } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { forEachEngine } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, carryingData, groupOf, NOSUCH, peerOf, pinLogOf, privateBatch, registeredOrgs } from '../../../support/aggregator-member.js'

/**
 * The receiver counts each private batch to be pinned against its author org's quota until a private pin of its key is
 * read (quotas.unpinnedBatchBytesPerOrg): past it a delivery is refused STORAGE_FULL with nothing stored, and taken
 * once pins have freed the share. Small batches count MIN_BATCH_CHARGE_BYTES each, so the quota here holds two.
 */
forEachEngine('private receiver: the quota on batches no pin names yet', (engine) => {
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  const LIMIT = 2 * MIN_BATCH_CHARGE_BYTES
  const open: AggregatorMember[] = []
  afterEach(async () => {
    for (const m of open.splice(0)) await m.close()
  })
  after(() => temp.cleanup())

  /** A member on `dir` (a new folder by default), registering the orgs and group when `register` (a new folder's default). */
  async function member(dir?: string, limit = LIMIT, register = dir === undefined): Promise<AggregatorMember> {
    const m = await AggregatorMember.open(dir ?? join(await temp.make('parley-receiver-quota-'), 'db'), new MemoryStorage(), org1!, { unpinnedBatchBytes: limit, engine })
    open.push(m)
    if (register) await m.register([org0!, org1!, org2!], [group])
    return m
  }
  /** The receiver's refusal of `b` from its author's node, or undefined when it took it. */
  async function deliver(m: AggregatorMember, b: BatchPayload): Promise<unknown> {
    const from = b.author.endsWith('org0') ? org0! : org2!
    try {
      await m.receiver.handle(peerOf(from), parseBatch(serializeBatch(b)))
      return undefined
    } catch (err) {
      return err
    }
  }
  const batchOf = (o = org0!, nonce = 0) => privateBatch(o, group, [['orders']], [[nonce]])

  it('refuses past the quota (STORAGE_FULL, naming it, nothing stored) per org; a pin of its key frees a share, another signer’s does not', async () => {
    const m = await member()
    const [p0, p1, p2] = [batchOf(org0, 0), batchOf(org0, 1), batchOf(org0, 2)]
    expect(await deliver(m, p0)).to.equal(undefined)
    expect(await deliver(m, p1)).to.equal(undefined)
    expect(m.quota!.usedBy('org0')).to.equal(LIMIT)
    const refused = await deliver(m, p2)
    expect(isParleyError(refused, 'STORAGE_FULL'), String(refused)).to.equal(true)
    expect((refused as Error).message).to.contain('quotas.unpinnedBatchBytesPerOrg').and.contain(`${LIMIT} bytes here`).and.contain('deleted after 24 h')
    expect(m.r.batches.byIdHash(p2.id, p2.hash), 'nothing of it stored').to.equal(undefined)
    expect(m.state(p2.messages[0]!.header.id)).to.equal(undefined)
    // Another org has a share of its own.
    expect(await deliver(m, batchOf(org2!, 0))).to.equal(undefined)
    expect(m.quota!.usedBy('org2')).to.equal(MIN_BATCH_CHARGE_BYTES)

    // A pin of p0 by another key decides nothing of it, and frees nothing.
    await m.pin(pinLogOf({ payload: p0 }, { signer: org2!.key }))
    expect(isParleyError(await deliver(m, p2), 'STORAGE_FULL')).to.equal(true)
    await m.pin(pinLogOf({ payload: p0 }))
    expect(m.quota!.usedBy('org0')).to.equal(MIN_BATCH_CHARGE_BYTES)
    expect(await deliver(m, p2), 'taken once a pin freed a share').to.equal(undefined)
    expect(m.state(p2.messages[0]!.header.id)).to.equal('pending')
  })

  it('a batch whose pin came first does not count, one delivered again counts once, and a restart counts what is stored again', async () => {
    const dir = join(await temp.make('parley-receiver-quota-'), 'db')
    let m = await member(dir)
    await m.register([org0!, org1!, org2!], [group])
    const [early, late] = [batchOf(org0, 0), batchOf(org0, 1)]
    await m.pin(pinLogOf({ payload: early }))
    expect(await deliver(m, early)).to.equal(undefined)
    expect(m.quota!.usedBy('org0'), 'its pin is here already').to.equal(0)
    expect(await deliver(m, late)).to.equal(undefined)
    expect(await deliver(m, late), 'delivered again (its acknowledgement lost)').to.equal(undefined)
    expect(m.quota!.usedBy('org0')).to.equal(MIN_BATCH_CHARGE_BYTES)

    await m.close()
    open.splice(open.indexOf(m), 1)
    m = await member(dir)
    expect(m.quota!.usedBy('org0'), 'counted again from the database').to.equal(MIN_BATCH_CHARGE_BYTES)
    // This member's chain reading starts again at block 1: the first log read again, then the next block's.
    await m.pin(pinLogOf({ payload: early }))
    expect(m.quota!.usedBy('org0')).to.equal(MIN_BATCH_CHARGE_BYTES)
    await m.pin(pinLogOf({ payload: late }))
    expect(m.quota!.usedBy('org0')).to.equal(0)
  })

  /** A data item of `n` characters of JSON, so that a batch counts more than MIN_BATCH_CHARGE_BYTES. */
  const bigData = (n: number) => {
    const value = JSON.stringify('x'.repeat(n))
    return { id: newId() as DataId, validator: 'json', namespace: group.namespace, hash: dataHash({ valueRaw: value }), created: now(), value }
  }

  it('a restart counts a value once when another org carries the same item under another digest', async () => {
    const dir = join(await temp.make('parley-receiver-quota-'), 'db')
    let m = await member(dir, 64 * MIN_BATCH_CHARGE_BYTES, true)
    const d = bigData(40_000)
    const a = carryingData(batchOf(org0, 0), d)
    expect(await deliver(m, a)).to.equal(undefined)
    const running = m.quota!.usedBy('org0')
    expect(running).to.equal(batchCharge(sealManifest(a).manifest, a.data))
    // org2, in the group, carries org0's item with another datatype, which its hash does not cover: a second row.
    expect(await deliver(m, carryingData(batchOf(org2, 0), NOSUCH(d)))).to.equal(undefined)
    expect(m.quota!.usedBy('org0'), 'org2 changes nothing of org0').to.equal(running)
    await m.close()
    open.splice(open.indexOf(m), 1)
    m = await member(dir, 64 * MIN_BATCH_CHARGE_BYTES)
    expect(m.quota!.usedBy('org0'), 'at start').to.equal(running)
  })

  it('a batch delivered again just after the expiry deleted it is stored and counted anew', async () => {
    const dir = join(await temp.make('parley-receiver-quota-'), 'db')
    const m = await member(dir, 64 * MIN_BATCH_CHARGE_BYTES, true)
    const a = carryingData(batchOf(org0, 0), bigData(40_000))
    expect(await deliver(m, a)).to.equal(undefined)
    const r = m.r
    // The copy comes as soon as the expiry's transaction is durable, before the sweep goes on.
    let again: unknown = 'not delivered'
    const db = {
      transaction: async <T>(fn: Parameters<Database['transaction']>[0]) => {
        const out = (await r.db.transaction(fn)) as T
        if (again === 'not delivered') again = await deliver(m, a)
        return out
      },
    } as unknown as Database
    const expiry = new UnpinnedExpiry({
      db, repo: r.unpinnedBatches, pins: r.pins, messages: r.messages, data: r.data, blobs: r.blobs, received: r.receivedBlobs,
      blobStore: { discard() {}, async removeDiscarded() {} } as never, keepMs: 1, caughtUp: () => true, log: () => {},
      now: () => Date.now() + 60_000, passed: (id, hash) => m.quota!.forget(id, hash),
    })
    expect(await expiry.sweep()).to.equal(1)
    expect(again, 'the copy is taken').to.equal(undefined)
    expect(r.batches.byIdHash(a.id, a.hash)?.state, 'stored again').to.equal('received')
    const atStart = r.unpinnedBatches.charges().reduce((n, c) => n + Math.max(c.bytes, MIN_BATCH_CHARGE_BYTES), 0)
    expect(atStart).to.be.greaterThan(MIN_BATCH_CHARGE_BYTES)
    expect(m.quota!.usedBy('org0'), 'running as at start').to.equal(atStart)
  })

  it('a batch whose own pin was read first is taken even when its org is at the quota', async () => {
    const m = await member()
    const [x1, x2, y] = [batchOf(org0, 0), batchOf(org0, 1), batchOf(org0, 2)]
    await m.pin(pinLogOf({ payload: y }))
    expect(await deliver(m, x1)).to.equal(undefined)
    expect(await deliver(m, x2)).to.equal(undefined)
    expect(() => m.receiver.admit(peerOf(org0!)), 'no room for another').to.throw(/quotas.unpinnedBatchBytesPerOrg/)
    expect(await deliver(m, y), 'y is pinned here already').to.equal(undefined)
    expect(m.quota!.usedBy('org0')).to.equal(LIMIT)
  })
})
