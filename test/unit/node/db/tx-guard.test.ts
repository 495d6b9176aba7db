import { expect } from 'chai'
import { join } from 'node:path'
import type { Database, Tx } from '../../../../node/db/database.js'
import { asError, DatabaseError } from '../../../../node/db/errors.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { forEachEngine, openTestDatabase } from '../../../support/repos.js'

const items = { version: 1, name: 'items', up: 'CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER)' }

/**
 * What every engine's tx handle enforces, the same on both: a statement that failed poisons the transaction (later
 * calls refused, the function's writes rolled back even when it swallowed the error), and a handle used after its
 * function returned is refused.
 */
forEachEngine('db: a transaction handle once poisoned or ended', (engine) => {
  const temp = new TempDirs()
  let db: Database
  before(async () => {
    db = await openTestDatabase(join(await temp.make('parley-tx-guard-'), 'db'), [items], engine)
  })
  after(async () => {
    await db.close()
    await temp.cleanup()
  })

  /** What `f` throws, as its code and message. */
  const thrown = (f: () => unknown): string => {
    try {
      f()
    } catch (err) {
      return (err as Error).message
    }
    return 'nothing'
  }

  it('refuses every call after a statement failed, with that failure as the cause, and rolls the function back', async () => {
    const seen: string[] = []
    let cause: unknown
    const outcome = await db
      .transaction((tx) => {
        tx.run("INSERT INTO items (id, n) VALUES ('kept?', 1)")
        seen.push(thrown(() => tx.run("INSERT INTO items (id, n) VALUES ('kept?', 2)")).split(':')[0]!)
        for (const call of [() => tx.get('SELECT 1 AS x'), () => tx.all('SELECT 1 AS x'), () => tx.run("INSERT INTO items (id) VALUES ('other')")]) {
          try {
            call()
          } catch (err) {
            seen.push((err as Error).message)
            cause = (err as Error).cause
          }
        }
        return 'swallowed'
      })
      .then((v) => v, (e: unknown) => (e as Error).message)
    expect(seen[0]).to.equal('DB_CONSTRAINT')
    expect(seen.slice(1)).to.deep.equal(Array(3).fill('DB_MISUSE: an earlier statement in this transaction failed, so it will roll back'))
    expect(cause).to.be.instanceOf(DatabaseError).with.property('code', 'DB_CONSTRAINT')
    expect(outcome).to.match(/^DB_CONSTRAINT: /)
    expect(db.all("SELECT id FROM items WHERE id IN ('kept?', 'other')")).to.deep.equal([])
  })

  it('refuses a handle used after its function returned', async () => {
    let kept: Tx | undefined
    await db.transaction((tx) => {
      kept = tx
    })
    const ended = 'DB_MISUSE: this transaction has ended; tx is only valid while its function runs'
    expect(thrown(() => kept!.get('SELECT 1 AS x'))).to.equal(ended)
    expect(thrown(() => kept!.run("INSERT INTO items (id) VALUES ('late')"))).to.equal(ended)
    expect(db.get("SELECT id FROM items WHERE id = 'late'")).to.equal(undefined)
  })
})

describe('db: errors as DatabaseError', () => {
  it('gives what an engine threw its code: a constraint, other SQL, or something not an Error at all', () => {
    const constraint = asError(new Error('UNIQUE constraint failed: items.id'))
    expect([constraint.code, constraint.message, (constraint.cause as Error).message]).to.deep.equal(['DB_CONSTRAINT', 'DB_CONSTRAINT: UNIQUE constraint failed: items.id', 'UNIQUE constraint failed: items.id'])
    expect(asError(new Error('no such table: x')).code).to.equal('DB_SQL')
    expect(asError('Wrong API use : tried to bind a value of an unknown type').message).to.equal('DB_MISUSE: Wrong API use : tried to bind a value of an unknown type')
    const own = new DatabaseError('DB_UNAVAILABLE', 'away')
    expect(asError(own)).to.equal(own)
    expect([own.temporarilyUnavailable, constraint.temporarilyUnavailable]).to.deep.equal([true, false])
  })
})
