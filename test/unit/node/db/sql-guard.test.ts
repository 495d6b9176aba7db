import { expect } from 'chai'
import { DatabaseError } from '../../../../node/db/errors.js'
import { assertDeterministic, classify, inserts, preview } from '../../../../node/db/sql-guard.js'

/**
 * The checks on SQL text that keep the journal replayable: which statements read, write or are forbidden (comments
 * skipped, erring towards write), which insert, and which write SQL is refused for a value a replay would not give.
 */
describe('db: SQL text guard', () => {
  it('classifies a statement by its first keyword after any comments', () => {
    const cases: [string, string][] = [
      ['SELECT 1', 'read'],
      ['values (1), (2)', 'read'],
      ['EXPLAIN QUERY PLAN SELECT * FROM t', 'read'],
      ['-- why\n  /* how */ SELECT 1', 'read'],
      ['/* a comment */\n-- and a line\nDELETE FROM t', 'write'],
      ['WITH x AS (SELECT 1) SELECT * FROM x', 'read'],
      ['WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x', 'write'],
      ['with x as (select 1) update t set a = 1', 'write'],
      ['PRAGMA user_version', 'read'],
      ['PRAGMA main.user_version = 3', 'write'],
      ['BEGIN IMMEDIATE', 'forbidden'],
      ['  rollback', 'forbidden'],
      ["ATTACH 'x.db' AS x", 'forbidden'],
      ['VACUUM', 'forbidden'],
      ['INSERT INTO t VALUES (1)', 'write'],
      ['CREATE TABLE t (a)', 'write'],
      // Nothing left but a comment, or a comment never closed: no keyword, so taken for a write.
      ['-- only a comment', 'write'],
      ['/* never closed SELECT 1', 'write'],
      // SQLite reads `/*/` as a comment opened, not opened and closed: what follows its real end is the statement.
      ['/*/ SELECT 1 */ DELETE FROM t', 'write'],
      ['/**/ SELECT 1', 'read'],
      ['', 'write'],
    ]
    expect(cases.map(([sql]) => [sql, classify(sql)])).to.deep.equal(cases)
  })

  it('says which statements insert rows, through a common table expression too', () => {
    expect(['INSERT INTO t VALUES (1)', '-- c\nREPLACE INTO t VALUES (1)', 'WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x'].map(inserts)).to.deep.equal([true, true, true])
    expect(['UPDATE t SET a = 1', 'WITH x AS (SELECT 1) DELETE FROM t', 'SELECT 1'].map(inserts)).to.deep.equal([false, false, false])
  })

  it('refuses write SQL whose effect a replay of the journal would not reproduce, saying why', () => {
    const refusals: [string, string][] = [
      ['INSERT INTO t VALUES (random())', 'random()/randomblob()'],
      ['INSERT INTO t VALUES (randomblob(16))', 'random()/randomblob()'],
      ["UPDATE t SET at = datetime('now')", "the 'now' time value"],
      ['UPDATE t SET at = CURRENT_TIMESTAMP', 'CURRENT_TIMESTAMP/CURRENT_DATE/CURRENT_TIME'],
      ['UPDATE t SET at = julianday()', 'a date function without a time value'],
      ["UPDATE t SET at = strftime('%s')", 'strftime() without a time value'],
      ['INSERT INTO t VALUES (changes())', 'changes()/total_changes()'],
      ['INSERT INTO t VALUES (total_changes())', 'changes()/total_changes()'],
      ['INSERT INTO t VALUES (last_insert_rowid())', 'last_insert_rowid()'],
    ]
    for (const [sql, why] of refusals) {
      const err = (() => {
        try {
          assertDeterministic(sql)
        } catch (e) {
          return e
        }
        return undefined
      })()
      expect(err, sql).to.be.instanceOf(DatabaseError).with.property('code', 'DB_NONDETERMINISTIC')
      expect((err as Error).message).to.equal(`DB_NONDETERMINISTIC: write SQL uses ${why}, which would replay differently from the journal; pass the value as a parameter: ${sql}`)
    }
    // The same functions given their time value, and a column merely named like one, replay the same.
    for (const sql of ["UPDATE t SET at = datetime(?, '+1 day')", "UPDATE t SET s = strftime('%s', ?)", 'UPDATE t SET randomness = ?']) expect(() => assertDeterministic(sql), sql).to.not.throw()
  })

  it('previews a statement on one line, cut to 120 characters', () => {
    expect(preview('  SELECT *\n\tFROM t  \n WHERE a = ?  ')).to.equal('SELECT * FROM t WHERE a = ?')
    const long = `SELECT ${'a, '.repeat(60)}b FROM t`
    expect(preview(long)).to.equal(`${long.slice(0, 117)}...`)
    expect(preview(long.slice(0, 120))).to.equal(long.slice(0, 120))
  })
})
