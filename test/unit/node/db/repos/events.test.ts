import { expect } from 'chai'
import { forEachEngine, freshReposEachTest, reposOver, type Repos } from '../../../../support/repos.js'
import { newId, type BatchId, type Hash, type MessageId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { NewEvent, NodeEvent } from '../../../../../node/model/index.js'

/**
 * An INSERT's rowid is read only when asked for (it costs a statement). Events are numbered by their repository, which
 * writes them without reading anything back: each gets the sequence it is stored under, in the order written, never one
 * given before.
 */
forEachEngine('insert rowids on demand', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  const events = (n: number): NewEvent[] =>
    Array.from({ length: n }, (_, i) => ({ type: 'message_confirmed', namespace: 'default', reference: newId<MessageId>(), topic: `t${i % 3}` }))

  const pins = (n: number): Parameters<Repos['pins']['insertMany']>[1] => {
    const batchId = newId<BatchId>()
    return Array.from({ length: n }, (_, i) => ({ batchId, batchHash: ('0x' + 'ab'.repeat(32)) as Hash, index: i, hash: ('0x' + i.toString(16).padStart(64, '0')) as Hash, masked: false, signer: '0x' + 'aa'.repeat(20), eventId: `e${i}` }))
  }

  it('answers every event its stored sequence, in order, across slice sizes and interleaved inserts', async () => {
    const out: NodeEvent[] = []
    await r.db.transaction((tx) => {
      for (const n of [1, 3, 64, 100, 129]) {
        r.pins.insertMany(tx, pins(n))
        out.push(...r.events.insertMany(tx, events(n), now()))
        r.pins.insertMany(tx, pins(7))
      }
    })
    const stored = new Map(r.db.all<{ id: string; seq: number }>('SELECT id, seq FROM events').map((e) => [e.id, e.seq]))
    expect(stored.size).to.equal(out.length)
    for (const e of out) expect(e.sequence, e.id).to.equal(stored.get(e.id))
    expect(out.map((e) => e.sequence)).to.deep.equal(out.map((_, i) => i + 1))
  })

  it('answers events with their keys in the order they always had', async () => {
    const input: NewEvent = { type: 'message_confirmed', namespace: 'default', reference: newId<MessageId>(), correlator: newId<MessageId>(), tx: newId<MessageId>(), topic: 't' }
    const [e] = await r.db.transaction((tx) => r.events.insertMany(tx, [input], now()))
    expect(Object.keys(e!)).to.deep.equal(['type', 'namespace', 'reference', 'correlator', 'tx', 'topic', 'id', 'created', 'sequence'])
    expect(e).to.deep.include({ ...input, sequence: 1 })
  })

  it('reads the rowid by default, and only then', async () => {
    const result = await r.db.transaction((tx) => {
      const first = r.events.insert(tx, events(1)[0]!, now())
      const asked = tx.run("INSERT INTO node_state (key, value) VALUES ('a', 'x')")
      const unasked = tx.run("INSERT INTO node_state (key, value) VALUES ('b', 'y')", undefined, { rowid: false })
      const second = r.events.insert(tx, events(1)[0]!, now())
      return { first: first.sequence, second: second.sequence, asked: asked.lastInsertRowid, unasked: unasked.lastInsertRowid, changes: unasked.changes }
    })
    // SQLite gives every table a rowid; PostgreSQL answers one only for a table with an identity column (node_state has none).
    const asked = engine === 'sqljs' ? r.db.get<{ rowid: number }>("SELECT rowid FROM node_state WHERE key = 'a'")!.rowid : 0
    expect(result).to.deep.equal({ first: 1, second: 2, asked, unasked: 0, changes: 1 })
  })

  it('never gives a sequence twice: a rolled back transaction leaves a gap, and a new repository goes on after the newest', async () => {
    const first = await r.db.transaction((tx) => r.events.insertMany(tx, events(2), now()))
    const undone = await r.db
      .transaction((tx) => {
        r.events.insertMany(tx, events(3), now())
        throw new Error('changed its mind')
      })
      .catch((e: Error) => e.message)
    expect(undone).to.equal('changed its mind')
    const after = await r.db.transaction((tx) => r.events.insertMany(tx, events(1), now()))
    expect([...first, ...after].map((e) => e.sequence)).to.deep.equal([1, 2, 6])
    const reopened = reposOver(r.db)
    const next = await r.db.transaction((tx) => reopened.events.insertMany(tx, events(1), now()))
    expect(next.map((e) => e.sequence)).to.deep.equal([7])
    expect(r.db.all<{ seq: number }>('SELECT seq FROM events ORDER BY seq').map((e) => e.seq)).to.deep.equal([1, 2, 6, 7])
  })
})
