import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { Database } from '../../../../node/db/database.js'
import type { JournalSink } from '../../../../node/db/journal-file.js'
import { migrations } from '../../../../node/db/schema/index.js'
import { SubscriptionsRepo } from '../../../../node/db/repos/subscriptions.js'
import { SubscriptionManager, type SubscriptionChange } from '../../../../node/events/subscriptions.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { newId, type SubscriptionId } from '../../../../node/core/ids.js'
import { snapshotInThread } from '../../../support/repos.js'

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => expect.fail('expected a rejection'),
    (e: unknown) => e as Error,
  )
}

describe('subscriptions: manager', () => {
  const temp = new TempDirs()
  let dir: string
  let db: Database
  let repo: SubscriptionsRepo
  let last: number
  let logs: string[]
  let manager: SubscriptionManager
  let changes: SubscriptionChange[]

  const open = async () => {
    db = await Database.open({ dir, migrations, buildSnapshot: snapshotInThread })
    repo = new SubscriptionsRepo(db)
    manager = new SubscriptionManager({ db, repo, lastSequence: () => last, log: (l) => logs.push(l) })
    manager.onChange((c) => changes.push(c))
  }

  beforeEach(async () => {
    dir = join(await temp.make('parley-subs-mgr-'), 'db')
    last = 0
    logs = []
    changes = []
    await open()
  })
  afterEach(() => db.close())
  after(() => temp.cleanup())

  describe('firstEvent is locked in at creation (FireFly calcFirstOffset)', () => {
    it('oldest: firstEvent "-1", offset 0 (every event, sequences start at 1)', async () => {
      last = 40
      const s = await manager.create('default', { name: 'old', options: { firstEvent: 'oldest' } })
      expect(s.options.firstEvent).to.equal('-1')
      expect(manager.currentOffset(s.id)).to.equal(0)
    })

    it('newest or nothing: the last sequence then', async () => {
      last = 40
      const a = await manager.create('default', { name: 'a', options: { firstEvent: 'newest' } })
      last = 41
      const b = await manager.create('default', { name: 'b' })
      expect([a.options.firstEvent, manager.currentOffset(a.id)]).to.deep.equal(['40', 40])
      expect([b.options.firstEvent, manager.currentOffset(b.id)]).to.deep.equal(['41', 41])
    })

    it('newest on an empty log: "-1", as FireFly (no newest event to start after)', async () => {
      const s = await manager.create('default', { name: 'empty' })
      expect([s.options.firstEvent, manager.currentOffset(s.id)]).to.deep.equal(['-1', 0])
    })

    it('a number: events after that sequence, taken as given even beyond the last one', async () => {
      last = 40
      const cases: [unknown, string, number][] = [
        [10, '10', 10],
        ['25', '25', 25],
        [0, '0', 0],
        [-1, '-1', 0],
        [100, '100', 100],
      ]
      for (const [i, [given, locked, offset]] of cases.entries()) {
        const s = await manager.create('default', { name: `n${i}`, options: { firstEvent: given } })
        expect([s.options.firstEvent, manager.currentOffset(s.id)], String(given)).to.deep.equal([locked, offset])
      }
    })

    it('what is stored is what was answered, across a restart', async () => {
      last = 7
      const s = await manager.create('default', { name: 'app', filter: { tag: 'x' }, options: { readAhead: 3 } })
      await db.close()
      last = 100
      await open()
      expect(manager.get('default', 'app')).to.deep.equal(s)
      expect(s.options).to.deep.equal({ firstEvent: '7', readAhead: 3 })
      expect(s.filter).to.deep.equal({ message: { tag: 'x' } })
      expect(manager.currentOffset(s.id)).to.equal(7)
    })
  })

  describe('create (POST)', () => {
    it('sets id, namespace and created; no updated', async () => {
      const s = await manager.create('ns1', { name: 'app', transport: 'websockets' })
      expect(s.namespace).to.equal('ns1')
      expect(s.id).to.match(/^[0-9a-f-]{36}$/)
      expect(s.created).to.be.a('string')
      expect(s).not.to.have.property('updated')
      expect(s.transport).to.equal('websockets')
    })

    it('refuses a name taken in the namespace with CONFLICT; the same name elsewhere is fine', async () => {
      const first = await manager.create('default', { name: 'app' })
      const err = await rejection(manager.create('default', { name: 'app', options: { firstEvent: 'oldest' } }))
      expect(isParleyError(err, 'CONFLICT')).to.equal(true)
      expect(err.message).to.include("a subscription with name 'default:app' already exists").and.include(first.id)
      await manager.create('other', { name: 'app' })
      expect(manager.list('default', { limit: 25, skip: 0 })).to.deep.equal([first])
    })

    it('two creates of one name in the same turn: one wins, the other is a CONFLICT', async () => {
      const results = await Promise.allSettled([manager.create('default', { name: 'race' }), manager.create('default', { name: 'race' })])
      expect(results.map((r) => r.status).sort()).to.deep.equal(['fulfilled', 'rejected'])
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
      expect(isParleyError(lost.reason, 'CONFLICT')).to.equal(true)
    })

    it('refuses bad input before writing anything', async () => {
      for (const body of [{}, { name: 'a', filter: { events: '(' } }, { name: 'a', options: { withData: true } }, { name: 'a', transport: 'webhooks' }, 'x']) {
        expect(isParleyError(await rejection(manager.create('default', body)), 'INVALID_FIELD'), JSON.stringify(body)).to.equal(true)
      }
      expect(repo.all()).to.deep.equal([])
      expect(changes).to.deep.equal([])
    })
  })

  describe('upsert (PUT)', () => {
    it('creates when the name is new', async () => {
      last = 5
      const { subscription, created } = await manager.upsert('default', { name: 'app', filter: { events: 'message_' } })
      expect(created).to.equal(true)
      expect(subscription.options.firstEvent).to.equal('5')
      expect(manager.get('default', subscription.id)).to.deep.equal(subscription)
    })

    it('replaces filter and options, keeping id, created, the locked firstEvent and the offset', async () => {
      last = 5
      const original = await manager.create('default', { name: 'app', filter: { events: 'a' }, options: { firstEvent: 'newest', readAhead: 1 } })
      await manager.setOffset(original.id, 9)
      last = 50
      const { subscription, created } = await manager.upsert('default', { name: 'app', filter: { tag: 'b' }, options: { firstEvent: 'oldest', batch: true } })
      expect(created).to.equal(false)
      expect(subscription.id).to.equal(original.id)
      expect(subscription.created).to.equal(original.created)
      expect(subscription.updated).to.be.a('string')
      expect(subscription.filter).to.deep.equal({ message: { tag: 'b' } })
      expect(subscription.options).to.deep.equal({ firstEvent: '5', readAhead: 50, batch: true, batchTimeout: '50ms' })
      expect(manager.currentOffset(original.id)).to.equal(9)
      expect(manager.get('default', 'app')).to.deep.equal(subscription)
    })

    it('an identical PUT writes nothing and tells no one', async () => {
      const original = await manager.create('default', { name: 'app', filter: { message: { tag: 'x' } }, options: { readAhead: 2 } })
      changes = []
      const again = await manager.upsert('default', { name: 'app', filter: { tag: 'x' }, options: { readAhead: 2, firstEvent: 'oldest' } })
      expect(again).to.deep.equal({ subscription: original, created: false })
      expect(changes).to.deep.equal([])
    })
  })

  describe('reading and deleting', () => {
    it('get finds by id (any case) or by name, only in its namespace', async () => {
      const s = await manager.create('default', { name: 'app' })
      expect(manager.get('default', s.id)).to.deep.equal(s)
      expect(manager.get('default', s.id.toUpperCase())).to.deep.equal(s)
      expect(manager.get('default', 'app')).to.deep.equal(s)
      expect(manager.byName('default', 'app')).to.deep.equal(s)
      expect(manager.get('other', s.id)).to.equal(undefined)
      expect(manager.get('other', 'app')).to.equal(undefined)
      expect(manager.get('default', newId())).to.equal(undefined)
    })

    it('delete by id or by name removes it and its offset; undefined when there is none', async () => {
      const a = await manager.create('default', { name: 'a' })
      const b = await manager.create('default', { name: 'b' })
      expect(await manager.delete('default', a.id)).to.deep.equal(a)
      expect(await manager.delete('default', 'b')).to.deep.equal(b)
      expect(await manager.delete('default', 'b')).to.equal(undefined)
      expect(await manager.delete('default', a.id)).to.equal(undefined)
      expect(repo.all()).to.deep.equal([])
      expect(repo.offset(a.id)).to.equal(undefined)
      const err = (() => {
        try {
          manager.currentOffset(a.id)
        } catch (e) {
          return e
        }
      })()
      expect(isParleyError(err, 'NOT_FOUND')).to.equal(true)
      expect(await manager.setOffset(a.id, 3)).to.equal(false)
    })

    it('a name can be used again after its subscription is deleted, with a new id and position', async () => {
      last = 3
      const a = await manager.create('default', { name: 'a' })
      await manager.delete('default', 'a')
      last = 8
      const again = await manager.create('default', { name: 'a' })
      expect(again.id).not.to.equal(a.id)
      expect(manager.currentOffset(again.id)).to.equal(8)
    })

    it('setOffset refuses what is not a sequence', async () => {
      const s = await manager.create('default', { name: 'a' })
      for (const bad of [-1, 1.5, Number.NaN]) expect((await rejection(manager.setOffset(s.id, bad))).message).to.match(/an offset is a sequence number >= 0/)
      expect(await manager.setOffset(s.id, 12)).to.equal(true)
      expect(manager.currentOffset(s.id)).to.equal(12)
    })
  })

  describe('onChange', () => {
    it('tells each durable change in order: upsert on create and replace, delete on delete', async () => {
      const a = await manager.create('default', { name: 'a' })
      const { subscription: a2 } = await manager.upsert('default', { name: 'a', filter: { events: 'x' } })
      const { subscription: b } = await manager.upsert('default', { name: 'b' })
      await manager.delete('default', 'a')
      expect(changes).to.deep.equal([
        { kind: 'upsert', subscription: a },
        { kind: 'upsert', subscription: a2 },
        { kind: 'upsert', subscription: b },
        { kind: 'delete', subscription: a2 },
      ])
    })

    it('a listener that throws is logged and does not stop the others or the change', async () => {
      const seen: string[] = []
      manager.onChange(() => {
        throw new Error('boom')
      })
      const stop = manager.onChange((c) => seen.push(c.subscription.name))
      await manager.create('default', { name: 'a' })
      stop()
      await manager.create('default', { name: 'b' })
      expect(seen).to.deep.equal(['a'])
      expect(changes.map((c) => c.subscription.name)).to.deep.equal(['a', 'b'])
      expect(logs).to.have.length(2)
      expect(logs[0]).to.match(/^subscriptions: a listener failed on the upsert of default:a: boom$/)
    })

    it('is told only once the change is on disk', async () => {
      // A journal whose appends wait until released: the change is made, but not yet durable.
      let release: (() => void) | undefined
      let held = false
      const wrapJournal = (sink: JournalSink): JournalSink => ({
        get size() {
          return sink.size
        },
        append: async (chunks) => {
          if (held) await new Promise<void>((resolve) => (release = resolve))
          return sink.append(chunks)
        },
        close: () => sink.close(),
      })
      const heldDir = join(await temp.make('parley-subs-held-'), 'db')
      const heldDb = await Database.open({ dir: heldDir, migrations, buildSnapshot: snapshotInThread, wrapJournal })
      try {
        const heldManager = new SubscriptionManager({ db: heldDb, repo: new SubscriptionsRepo(heldDb), lastSequence: () => 0, log: () => {} })
        const told: string[] = []
        heldManager.onChange((c) => told.push(c.subscription.name))
        held = true
        const creating = heldManager.create('default', { name: 'a' })
        while (!release) await new Promise((r) => setImmediate(r))
        expect(heldManager.get('default', 'a'), 'written, but not durable yet').not.to.equal(undefined)
        expect(told).to.deep.equal([])
        held = false
        release()
        await creating
        expect(told).to.deep.equal(['a'])
      } finally {
        await heldDb.close()
      }
    })
  })

  it('ids are SubscriptionIds: currentOffset of an unknown one is NOT_FOUND', () => {
    expect(() => manager.currentOffset(newId<SubscriptionId>())).to.throw(/not found/)
  })
})
