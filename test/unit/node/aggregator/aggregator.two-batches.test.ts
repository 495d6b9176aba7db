import { expect } from 'chai'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import { formatPin, privatePin } from '../../../../node/core/hashes.js'
import { orgDid, type BatchPayload, type PinnedBatch } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, NOSUCH, broadcastBatch, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, resent, type SealedBatch } from '../../../support/aggregator-member.js'

/**
 * The same message (id and hash) in two batches of its own author that carry its data item with different fields
 * (a datatype nobody defined in the second), both pinned: the batch whose pin comes first decides it, by what that
 * batch carried, on every member, whichever batch was stored first here, also across a restart.
 */
describe('aggregator: one message in two batches of its author', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  after(() => temp.cleanup())

  async function member(storage: MemoryStorage, dir?: string): Promise<AggregatorMember> {
    const m = await AggregatorMember.open(dir ?? join(await temp.make('parley-two-batches-'), 'db'), storage, org1!)
    if (dir === undefined) await m.register([org0!, org1!, org2!], [group])
    return m
  }
  function verdict(m: AggregatorMember, b: BatchPayload): { state: string; datatypes: (string | null)[]; batch: string | undefined } {
    const row = m.r.messages.byRef(b.messages[0]!.header.id, b.messages[0]!.hash)!
    return { state: row.state, datatypes: m.r.data.getMany(row.data).map((d) => d.datatype?.name ?? null), batch: row.batch }
  }

  for (const [first, expected] of [['plain', { state: 'confirmed', datatypes: [null] }], ['nosuch', { state: 'rejected', datatypes: ['nosuch'] }]] as const) {
    it(`broadcast: the batch pinned first (${first}) decides it, whichever was fetched first, also across a restart`, async () => {
      const storage = new MemoryStorage()
      const publish = async (payload: BatchPayload): Promise<SealedBatch> => ({ payload, ref: await storage.upload(new TextEncoder().encode(serializeBatch(payload))) })
      const plain = broadcastBatch('org0', org0!.key, [['orders']])
      const nosuch = resent(plain, NOSUCH)
      const sealed = { plain: await publish(plain), nosuch: await publish(nosuch) }
      const onChain = first === 'plain' ? [sealed.plain, sealed.nosuch] : [sealed.nosuch, sealed.plain]
      const decider = onChain[0]!.payload
      for (const [fetchFirst, restart] of [[0, false], [1, false], [1, true]] as const) {
        const dir = join(await temp.make('parley-two-batches-'), 'db')
        let m = await AggregatorMember.open(dir, storage, org1!)
        await m.register([org0!, org1!, org2!], [group])
        const announced: PinnedBatch[] = []
        for (const s of onChain) {
          const before = m.announced.length
          await m.pin(pinLogOf(s))
          announced.push(m.announced[before]!)
        }
        await m.fetch(announced[fetchFirst]!)
        if (fetchFirst === 1) expect(verdict(m, decider).state, 'its first pin waits for its own batch').to.equal('pending')
        if (restart) {
          await m.close()
          m = await member(storage, dir)
        }
        await m.fetch(announced[1 - fetchFirst]!)
        expect(verdict(m, decider), `fetched ${fetchFirst === 0 ? 'in' : 'against'} chain order${restart ? ', restarted between' : ''}`).to.deep.equal({ ...expected, batch: decider.id })
        expect(m.r.events.list({ namespace: 'default', limit: 10, skip: 0, ascending: true }).map((e) => e.type), 'one verdict').to.have.length(1)
        await m.close()
      }
    })
  }

  it('private: the batch pinned first decides it, by its own data, in either order of delivery', async () => {
    // The second batch carries the message with a datatype nobody defined: pinned first, it rejects the message.
    const plain = privateBatch(org0!, group, [['orders']], [[0]])
    const nosuch = resent(plain, NOSUCH)
    for (const [onChain, expected] of [[[plain, nosuch], { state: 'confirmed', datatypes: [null] }], [[nosuch, plain], { state: 'rejected', datatypes: ['nosuch'] }]] as const) {
      for (const delivered of [[plain, nosuch], [nosuch, plain]]) {
        const m = await member(new MemoryStorage())
        for (const b of delivered) expect(await m.deliver(peerOf(org0!), b)).to.equal(undefined)
        for (const b of onChain) await m.pin(pinLogOf({ payload: b }))
        expect(verdict(m, plain)).to.deep.equal({ ...expected, batch: onChain[0]!.id })
        await m.close()
      }
    }
  })

  it('private: the deciding batch’s pins count, not those of the batch stored first', async () => {
    const plain = privateBatch(org0!, group, [['orders']], [[0]])
    // The same message again, carrying the pin of nonce 1, held first here: its pin on chain comes after the first.
    const later = resent(plain, (d) => d, [formatPin(privatePin('orders', group.hash, orgDid('org0'), 1), 1)])
    const m = await member(new MemoryStorage())
    for (const b of [later, plain]) expect(await m.deliver(peerOf(org0!), b)).to.equal(undefined)
    for (const b of [plain, later]) await m.pin(pinLogOf({ payload: b }))
    expect(verdict(m, plain)).to.deep.equal({ state: 'confirmed', datatypes: [null], batch: plain.id })
    expect(m.r.messages.byRef(plain.messages[0]!.header.id, plain.messages[0]!.hash)!.pins, 'as its deciding batch carried them').to.deep.equal(plain.messages[0]!.pins)
    await m.close()
  })

  it('a message stored at schema v18 naming this member’s own item: its batch fetched again is what decides it', async () => {
    const storage = new MemoryStorage()
    const b = resent(broadcastBatch('org0', org0!.key, [['orders']]), NOSUCH)
    const sealed = { payload: b, ref: await storage.upload(new TextEncoder().encode(serializeBatch(b))) }
    const m = await member(storage)
    // As version 20 leaves it: the item this member's own (without the datatype), the message pending with a
    // reference without a digest, its batch's record deleted so that its pin has it fetched again.
    const [item, sent] = [b.data[0]!, b.messages[0]!]
    await m.r.db.transaction((tx) => {
      m.r.data.insert(tx, { ...item, datatype: undefined }, true)
      m.r.messages.insert(tx, { header: sent.header, hash: sent.hash, data: sent.data, state: 'pending', batch: b.id }, false)
    })
    const before = m.announced.length
    await m.pin(pinLogOf(sealed))
    await m.fetch(m.announced[before]!)
    expect(verdict(m, b)).to.deep.equal({ state: 'rejected', datatypes: ['nosuch'], batch: b.id })
    await m.close()
  })
})
