import { expect } from 'chai'
import { closingParen, maskLiterals, splitArgs, splitStatements } from '../../../../../node/db/pg/sql-text.js'

/** SQL text as both engines lex it: what is code, where an argument list ends, where a statement ends. */
describe('PostgreSQL dialect: reading SQL text', () => {
  it('blanks literals, quoted identifiers and comments, keeping their quotes and every position', () => {
    const cases: [string, string][] = [
      ["a = 'x(y)' AND b", "a = '    ' AND b"],
      ["'it''s' || c", "'     ' || c"],
      ['"odd ""name""" = 1', '"            " = 1'],
      ['a -- why (not)\nb', 'a             \nb'],
      ['a -- to the end', 'a              '],
      ['a /* (x) */ b', 'a           b'],
      // Unterminated: the rest is inside, and no closing quote is made up.
      ["a = 'open", "a = '    "],
      ['a /* open', 'a        '],
    ]
    for (const [sql, masked] of cases) {
      expect(maskLiterals(sql), sql).to.equal(masked)
      expect(maskLiterals(sql).length).to.equal(sql.length)
    }
  })

  it('finds the parenthesis that closes a list in code, not one in a literal; -1 when there is none', () => {
    const sql = "f(a, g(b, ')'), c) + 1"
    const masked = maskLiterals(sql)
    expect(closingParen(masked, 1)).to.equal(sql.lastIndexOf(')'))
    expect(closingParen(maskLiterals('f(a, (b)'), 1)).to.equal(-1)
  })

  it('splits arguments at commas outside nested calls and literals, trimmed', () => {
    const args = (sql: string) => {
      const masked = maskLiterals(sql)
      return splitArgs(sql, masked, sql.indexOf('('), closingParen(masked, sql.indexOf('(')))
    }
    expect(args("f( a , g(b, c), ',' )")).to.deep.equal(['a', 'g(b, c)', "','"])
    expect(args('f()')).to.deep.equal([])
    expect(args('f(  )')).to.deep.equal([])
    expect(args('f(a,)')).to.deep.equal(['a', ''])
  })

  it('splits a script at semicolons outside literals, comments, parentheses and trigger bodies', () => {
    const script = [
      "INSERT INTO t VALUES ('a;b'); -- c;d",
      'CREATE TABLE u (a TEXT /* ; */, b TEXT);;',
      'CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET a = 1; DELETE FROM u; END;',
      'SELECT 1',
    ].join('\n')
    expect(splitStatements(script)).to.deep.equal([
      "INSERT INTO t VALUES ('a;b')",
      '-- c;d\nCREATE TABLE u (a TEXT /* ; */, b TEXT)',
      'CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET a = 1; DELETE FROM u; END',
      'SELECT 1',
    ])
    // A tail of nothing but a comment is no statement.
    expect(splitStatements('SELECT 1; -- done')).to.deep.equal(['SELECT 1'])
    expect(splitStatements('CREATE TRIGGER x AFTER DELETE ON t BEGIN SELECT 1; END; SELECT 2;')).to.deep.equal(['CREATE TRIGGER x AFTER DELETE ON t BEGIN SELECT 1; END', 'SELECT 2'])
  })
})
