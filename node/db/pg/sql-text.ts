/**
 * Reading SQL text the way both engines lex it, for the PostgreSQL translators: which characters are code and which
 * belong to a string literal, a quoted identifier or a comment, and where a parenthesised argument list ends.
 */

/**
 * `sql` with every character inside a literal ('...'), quoted identifier ("..."), or comment replaced by a space, so
 * that patterns matched on the result never match inside one; the quotes themselves are kept. Same length as `sql`,
 * so positions carry over.
 */
export function maskLiterals(sql: string): string {
  let out = ''
  let i = 0
  const n = sql.length
  while (i < n) {
    const c = sql[i]!
    if (c === "'" || c === '"') {
      const end = closingQuote(sql, i)
      out += c + ' '.repeat(Math.max(0, end - i - 1)) + (end < n ? c : '')
      i = end + 1
    } else if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i)
      const end = nl < 0 ? n : nl
      out += ' '.repeat(end - i)
      i = end
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2)
      const end = close < 0 ? n : close + 2
      out += ' '.repeat(end - i)
      i = end
    } else {
      out += c
      i++
    }
  }
  return out
}

/** Index of the quote closing the literal opened at `open` (a doubled quote is an escaped one); `sql.length` if none. */
function closingQuote(sql: string, open: number): number {
  const q = sql[open]
  let i = open + 1
  for (;;) {
    const j = sql.indexOf(q!, i)
    if (j < 0) return sql.length
    if (sql[j + 1] === q) {
      i = j + 2
      continue
    }
    return j
  }
}

/** Index of the `)` matching the `(` at `open` in masked text; -1 if unbalanced. */
export function closingParen(masked: string, open: number): number {
  let depth = 0
  for (let i = open; i < masked.length; i++) {
    const c = masked[i]
    if (c === '(') depth++
    else if (c === ')' && --depth === 0) return i
  }
  return -1
}

/** The comma-separated arguments between `open` and `close` (exclusive) of `sql`, split at depth 0, trimmed. */
export function splitArgs(sql: string, masked: string, open: number, close: number): string[] {
  const args: string[] = []
  let depth = 0
  let start = open + 1
  for (let i = open + 1; i < close; i++) {
    const c = masked[i]
    if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === ',' && depth === 0) {
      args.push(sql.slice(start, i).trim())
      start = i + 1
    }
  }
  const last = sql.slice(start, close).trim()
  if (last !== '' || args.length > 0) args.push(last)
  return args
}

/** Splits a script into statements at `;` outside literals, comments and parentheses; empty statements dropped. */
export function splitStatements(script: string): string[] {
  const masked = maskLiterals(script)
  const out: string[] = []
  let depth = 0
  let start = 0
  let inTrigger = false
  for (let i = 0; i < masked.length; i++) {
    const c = masked[i]
    if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === ';' && depth === 0) {
      const stmt = script.slice(start, i)
      // A trigger's body holds statements of its own: it ends at `END;`.
      if (!inTrigger && /^\s*CREATE\s+(TEMP\s+|TEMPORARY\s+)?TRIGGER\b/i.test(masked.slice(start, i))) inTrigger = true
      if (inTrigger && !/\bEND\s*$/i.test(masked.slice(start, i))) continue
      inTrigger = false
      if (stmt.trim() !== '') out.push(stmt.trim())
      start = i + 1
    }
  }
  const tail = script.slice(start).trim()
  if (maskLiterals(tail).trim() !== '') out.push(tail)
  return out
}
