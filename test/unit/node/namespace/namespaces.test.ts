import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { Namespaces } from '../../../../node/namespace/namespaces.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { newId, type DataId, type SubscriptionId } from '../../../../node/core/ids.js'
import type { Timestamp } from '../../../../node/core/time.js'

const at = (s: number) => `2024-01-01T00:00:${String(s).padStart(2, '0')}Z` as Timestamp
const STARTED = at(59)

/** Namespaces as a member has them, over a real database. */
describe('namespaces', () => {
  const temp = new TempDirs()
  let r: Repos
  let namespaces: Namespaces

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-namespaces-'), 'db'))
    namespaces = new Namespaces({ repo: r.namespaces, started: STARTED })
  })
  afterEach(async () => {
    await r.db.close()
    await temp.cleanup()
  })

  it('a new member has `default`, dated when the node started', () => {
    expect(namespaces.list()).to.deep.equal([{ name: 'default', networkName: 'default', description: '', created: STARTED }])
  })

  it('lists every namespace that holds data, events or subscriptions, by name, dated by the first thing it held', async () => {
    await r.db.transaction((tx) => {
      r.data.insert(tx, { id: newId<DataId>(), validator: 'json', namespace: 'zeta', hash: dataHash({ valueRaw: '1' }), created: at(5), value: '1' }, true)
      r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'alpha', reference: newId() }], at(3))
      r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'zeta', reference: newId() }], at(2))
      r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'default', reference: newId() }], at(7))
    })
    await r.db.transaction((tx) =>
      r.subscriptions.insert(tx, { id: newId<SubscriptionId>(), namespace: 'mid', name: 's', transport: 'websockets', filter: {}, options: {}, created: at(4) }, 0),
    )
    expect(namespaces.list().map((n) => [n.name, n.created])).to.deep.equal([
      ['alpha', at(3)],
      ['default', at(7)],
      ['mid', at(4)],
      ['zeta', at(2)],
    ])
  })

  it('answers any name asked for, dated by what it holds or by the start', () => {
    expect(namespaces.get('elsewhere')).to.deep.equal({ name: 'elsewhere', networkName: 'elsewhere', description: '', created: STARTED })
  })
})
