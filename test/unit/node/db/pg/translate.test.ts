import { expect } from 'chai'
import { IN_LIST, TEXT_FROM_BYTES } from '../../../../../node/db/in-list.js'
import { translateStatement } from '../../../../../node/db/pg/translate.js'

/** The repositories' SQLite SQL as the PostgreSQL engine runs it. */
describe('PostgreSQL dialect: statement translation', () => {
  const vectors: [string, string, string][] = [
    ['positional placeholders', 'SELECT * FROM t WHERE a = ? AND b > ? LIMIT ?', 'SELECT * FROM t WHERE a = $1 AND b > $2 LIMIT $3'],
    ['numbered placeholders, then the next after the largest', 'VALUES (?1, ?3, ?2), (?1, ?)', 'VALUES ($1, $3, $2), ($1, $4)'],
    ['no placeholder inside a literal or a comment', "SELECT '?', \"a?\" FROM t -- why?\nWHERE x = ?", "SELECT '?', \"a?\" FROM t -- why?\nWHERE x = $1"],
    ['an IN list bound as one array', `SELECT * FROM t WHERE id ${IN_LIST} AND n = ?`, 'SELECT * FROM t WHERE id = ANY($1) AND n = $2'],
    ['text bound as its bytes', `INSERT INTO d (v) VALUES (${TEXT_FROM_BYTES})`, 'INSERT INTO d (v) VALUES (CAST($1 AS TEXT))'],
    ['json_extract with a path', "SELECT COALESCE(json_extract(b.manifest, '$.tx.type'), 'x') FROM b", "SELECT COALESCE(((b.manifest)::jsonb #>> '{tx,type}'), 'x') FROM b"],
    [
      'UPDATE ... FROM json_each',
      "UPDATE m SET pins = json_extract(p.value, '$[1]') FROM (SELECT value FROM json_each(?)) AS p WHERE m.id = json_extract(p.value, '$[0]')",
      "UPDATE m SET pins = ((p.value)::jsonb #>> '{1}') FROM (SELECT value FROM jsonb_array_elements(($1)::jsonb)) AS p WHERE m.id = ((p.value)::jsonb #>> '{0}')",
    ],
    ['instr, nested in other calls', 'SELECT SUBSTR(c, CASE WHEN INSTR(c, ?) > 0 THEN 1 ELSE 2 END) FROM t', 'SELECT SUBSTR(c, CASE WHEN strpos(c, $1) > 0 THEN 1 ELSE 2 END) FROM t'],
    ['group_concat and json_group_array', "SELECT group_concat(h, ','), json_group_array(h) FROM t", "SELECT string_agg(h, ','), COALESCE(json_agg(h)::text, '[]') FROM t"],
    ['scalar MAX and MIN, but not the aggregates', 'SELECT MAX(a, b), MIN(a, ?), MAX(seq) FROM t', 'SELECT GREATEST(a, b), LEAST(a, $1), MAX(seq) FROM t'],
    ["LIKE as SQLite's (ASCII case ignored)", "SELECT 1 FROM t WHERE a LIKE ? ESCAPE '\\' AND b = 'LIKE'", "SELECT 1 FROM t WHERE a ILIKE $1 ESCAPE '\\' AND b = 'LIKE'"],
    ["a planner hint PostgreSQL has no use for", 'SELECT * FROM pins INDEXED BY pins_waiting WHERE seq > ?', 'SELECT * FROM pins WHERE seq > $1'],
    [
      "an upsert's bare columns qualified (PostgreSQL finds them ambiguous with excluded's)",
      'INSERT INTO nonces (hash, next) VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET next = next + excluded.next RETURNING next',
      'INSERT INTO nonces (hash, next) VALUES ($1, $2) ON CONFLICT (hash) DO UPDATE SET next = nonces.next + excluded.next RETURNING next',
    ],
    [
      'an upsert keeping the larger value',
      'INSERT INTO nextpins (context, author, nonce) VALUES (?, ?, ?) ON CONFLICT (context, author) DO UPDATE SET nonce = MAX(nonce, excluded.nonce)',
      'INSERT INTO nextpins (context, author, nonce) VALUES ($1, $2, $3) ON CONFLICT (context, author) DO UPDATE SET nonce = GREATEST(nextpins.nonce, excluded.nonce)',
    ],
  ]
  for (const [what, sqlite, pg] of vectors) {
    it(`translates ${what}`, () => {
      expect(translateStatement(sqlite).text).to.equal(pg)
    })
  }

  it('says which parameters become arrays and which bytes become text', () => {
    const s = translateStatement(`UPDATE t SET v = ${TEXT_FROM_BYTES} WHERE id ${IN_LIST} AND k = ?`)
    expect(s.count).to.equal(3)
    expect([...s.utf8]).to.deep.equal([0])
    expect([...s.arrays]).to.deep.equal([1])
  })

  it('numbers named parameters in order of first use, each once', () => {
    const s = translateStatement('SELECT * FROM t WHERE a = :id OR b = :name OR c = :id')
    expect(s.text).to.equal('SELECT * FROM t WHERE a = $1 OR b = $2 OR c = $1')
    expect(s.names).to.deep.equal([':id', ':name'])
  })

  it('refuses what it cannot translate rather than guess', () => {
    expect(() => translateStatement('SELECT * FROM t WHERE a = ? AND b = :b')).to.throw(/mixes \? and :name/)
    expect(() => translateStatement("SELECT json_extract(v, '$.a[#-1]') FROM t")).to.throw(/DB_SQL: json_extract path/)
  })

  it('keeps a call it has no form for at that argument count as written, translating the calls in its arguments', () => {
    const cases: [string, string][] = [
      ["SELECT json_extract(v) FROM t", 'SELECT json_extract(v) FROM t'],
      ['SELECT json_each(a, b) FROM t', 'SELECT json_each(a, b) FROM t'],
      ['SELECT instr(a) FROM t', 'SELECT instr(a) FROM t'],
      ['SELECT group_concat() FROM t', 'SELECT group_concat() FROM t'],
      ['SELECT group_concat(h) FROM t', "SELECT string_agg(h, ',') FROM t"],
      ['SELECT json_group_array(a, b), ifnull(a) FROM t', 'SELECT json_group_array(a, b), ifnull(a) FROM t'],
      ['SELECT MIN(ifnull(a, 0)) FROM t', 'SELECT MIN(COALESCE(a, 0)) FROM t'],
      // An unbalanced call is left as it is for the server to refuse.
      ['SELECT ifnull(a, 0 FROM t', 'SELECT ifnull(a, 0 FROM t'],
    ]
    for (const [sqlite, pg] of cases) expect(translateStatement(sqlite).text, sqlite).to.equal(pg)
  })

  it("qualifies only an upsert's columns, not its keywords, literals, types or excluded's", () => {
    const sql = "INSERT INTO t (k, n, s) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET n = CASE WHEN n IS NULL THEN excluded.n ELSE CAST(n AS INTEGER) END, s = 'n'"
    expect(translateStatement(sql).text).to.equal("INSERT INTO t (k, n, s) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET n = CASE WHEN t.n IS NULL THEN excluded.n ELSE CAST(t.n AS INTEGER) END, s = 'n'")
    // DO NOTHING, or no table: nothing to qualify.
    expect(translateStatement('INSERT INTO t (k) VALUES (?) ON CONFLICT DO NOTHING').text).to.equal('INSERT INTO t (k) VALUES ($1) ON CONFLICT DO NOTHING')
  })

  it('answers a statement with no parameters, named or positional', () => {
    expect(translateStatement('SELECT 1')).to.deep.include({ text: 'SELECT 1', count: 0, names: undefined })
  })
})
