import { expect } from 'chai'
import type { BridgeReply, Step } from '../../../../../node/db/pg/bridge-protocol.js'
import { SyncBridge } from '../../../../../node/db/pg/bridge.js'
import { RELEASE, SAVEPOINT } from '../../../../../node/db/pg/pg-tick.js'
import { testDatabase } from '../../../../support/postgres.js'

const ONE = 'INSERT INTO t (k) VALUES ($1)'
const row = (k: string, group: number): Step => ({ text: ONE, values: [k], group })
const fn = (group: number, k: string): Step[] => [{ ...SAVEPOINT, group }, row(k, group), RELEASE]

/**
 * A merged group (coalesce.ts) that fails is rolled back and its original groups run in its place, each failing
 * alone: here through the worker's path for a group step sent on its own, not pipelined with others.
 */
describe('PostgreSQL bridge worker: a failing merged group run alone falls back to its groups', () => {
  let drop: () => Promise<void>
  let bridge: SyncBridge

  before(async () => {
    const d = await testDatabase({ empty: true })
    drop = d.drop
    bridge = await SyncBridge.start(d.url, () => {})
    ok(bridge.call([{ text: 'CREATE TABLE t (k TEXT PRIMARY KEY)' }]))
    ok(bridge.call([{ text: ONE, values: ['dup'] }]))
  })
  after(async () => {
    await bridge?.close()
    await drop?.()
  })

  function ok(r: BridgeReply): Extract<BridgeReply, { ok: true }> {
    if (!r.ok) throw new Error(`expected success: ${r.failure.message}`)
    return r
  }

  it("fails only the original group whose row fails, and commits the others' rows", async () => {
    ok(bridge.call([{ text: 'BEGIN' }, { ...SAVEPOINT, group: 9 }]))
    const merged: Step = {
      text: 'INSERT INTO t (k) VALUES ($1), ($2), ($3)',
      values: ['a', 'dup', 'b'],
      group: 9,
      fallback: [...fn(1, 'a'), ...fn(2, 'dup'), ...fn(3, 'b')],
    }
    const r = ok(bridge.call([merged]))
    expect(r.groupFailures?.map((f) => [f.group, f.failure.sqlState])).to.deep.equal([[2, '23505']])
    ok(await bridge.send([RELEASE, { text: 'COMMIT' }]))
    expect(ok(bridge.call([{ text: 'SELECT k FROM t ORDER BY k' }])).rows.map((x) => x['k'])).to.deep.equal(['a', 'b', 'dup'])
  })
})
