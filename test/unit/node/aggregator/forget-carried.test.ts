import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, NOSUCH, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, resent } from '../../../support/aggregator-member.js'

/**
 * What a further batch carried with a message held from another batch is recorded until every message of that batch
 * is decided; then the records go, and the data rows only they named with them.
 */
describe('aggregator: forgetting what decided batches carried', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  after(() => temp.cleanup())

  const count = (m: AggregatorMember, table: string): number => Number(m.r.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)!.n)

  for (const deciding of ['the batch stored first', 'the further batch'] as const) {
    it(`${deciding} pinned first: records and the copies nothing names go once both batches’ pins are read`, async () => {
      const plain = privateBatch(org0!, group, [['orders']], [[0]])
      const nosuch = resent(plain, NOSUCH)
      const m = await AggregatorMember.open(join(await temp.make('parley-forget-carried-'), 'db'), new MemoryStorage(), org1!)
      try {
        await m.register([org0!, org1!, org2!], [group])
        for (const b of [plain, nosuch]) await m.deliver(peerOf(org0!), b)
        expect(count(m, 'carried_messages'), 'what the further batch carried').to.equal(1)
        expect(m.r.batches.byIdHash(nosuch.id, nosuch.hash)!.carried).to.equal(true)
        const onChain = deciding === 'the batch stored first' ? [plain, nosuch] : [nosuch, plain]
        await m.pin(pinLogOf({ payload: onChain[0]! }))
        await m.pin(pinLogOf({ payload: onChain[1]! }))
        const row = m.r.messages.byRef(plain.messages[0]!.header.id, plain.messages[0]!.hash)!
        expect(row.batch).to.equal(onChain[0]!.id)
        expect(count(m, 'carried_messages')).to.equal(0)
        expect(m.r.batches.byIdHash(nosuch.id, nosuch.hash)!.carried).to.equal(undefined)
        expect(m.r.data.getMany(row.data).map((d) => d.datatype?.name ?? null), 'what the deciding batch carried stays').to.deep.equal(deciding === 'the batch stored first' ? [null] : ['nosuch'])
        expect(count(m, 'data'), 'the copy only the other batch named is gone').to.equal(1)
      } finally {
        await m.close()
      }
    })
  }
})
