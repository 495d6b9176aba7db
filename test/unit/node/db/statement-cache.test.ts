import { expect } from 'chai'
import { openInMemory } from '../../../../node/db/sqljs.js'
import { StatementCache } from '../../../../node/db/statement-cache.js'
import { DatabaseError } from '../../../../node/db/errors.js'
import type { Database as SqlJsDatabase, Statement } from 'sql.js'

function firstValue(stmt: Statement): unknown {
  try {
    return stmt.step() ? stmt.get()[0] : undefined
  } finally {
    stmt.reset()
  }
}

describe('db: the statement cache evicts the least recently used statement', function () {
  let db: SqlJsDatabase
  before(async function () {
    db = await openInMemory()
  })
  after(function () {
    db.close()
  })

  it('a hit returns the same prepared statement and keeps it from eviction; a miss past the capacity frees the oldest', function () {
    const cache = new StatementCache(db, 3)
    const a = cache.get('SELECT 1')
    cache.get('SELECT 2')
    cache.get('SELECT 3')
    // A used again: B is now the oldest.
    expect(cache.get('SELECT 1')).to.equal(a)
    cache.get('SELECT 4')
    expect(cache.size).to.equal(3)
    expect(cache.has('SELECT 1'), 'used recently').to.equal(true)
    expect(cache.has('SELECT 2'), 'the least recently used').to.equal(false)
    expect(cache.has('SELECT 3')).to.equal(true)
    expect(cache.has('SELECT 4')).to.equal(true)
    // The evicted statement was freed; asked again, it is prepared afresh and works.
    const b = cache.get('SELECT 2')
    expect(firstValue(b.stmt)).to.equal(2)
    expect(cache.has('SELECT 3'), 'now the least recently used').to.equal(false)
    // The statement kept across evictions still runs.
    expect(firstValue(a.stmt)).to.equal(1)
    cache.clear()
    expect(cache.size).to.equal(0)
  })
})

describe('db: the statement cache prepares one statement per text', function () {
  let db: SqlJsDatabase
  before(async function () {
    db = await openInMemory()
  })
  after(function () {
    db.close()
  })

  it('refuses a text of several statements, or of none, as DB_MISUSE, and takes one with a trailing semicolon', function () {
    const cache = new StatementCache(db)
    for (const [sql, why] of [
      ['SELECT 1; SELECT 2', 'several statements'],
      ['', 'no statement'],
      ['  ', 'no statement'],
      ['-- a comment', 'no statement'],
      ['/* a comment */;', 'no statement'],
    ] as const) {
      expect(() => cache.get(sql), JSON.stringify(sql)).to.throw(DatabaseError, new RegExp(`DB_MISUSE: ${why} in one call`))
    }
    expect(firstValue(cache.get('SELECT 7;').stmt)).to.equal(7)
    expect(firstValue(cache.get("SELECT 'a;b'").stmt)).to.equal('a;b')
  })
})
