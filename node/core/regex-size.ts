/**
 * How large a program RE2 (re2js) compiles a pattern to, bounded from above by reading the pattern's text once,
 * before compiling it. The text's length says little: a repeat copies what it repeats (`[a-z]{1000}` is eleven
 * characters and a thousand instructions), and re2js spends 2-9 µs per instruction compiling and up to one step per
 * instruction per character matching, on the thread that asked. Every member computes the same figure from the same
 * text, so a limit on it refuses a pattern alike everywhere, and nothing runs the compile to find out.
 *
 * The count follows RE2's compiler, rounding up: one instruction per literal character, class, `.` or assertion, and
 * one for an empty alternative or group; two more for `*` (one where x cannot match nothing, as in RE2), one for `+`
 * and `?`, one for each `|`, two for a capturing group; `x{n}` is n copies of x, `x{n,}` n copies (at least one) and a
 * loop, `x{n,m}` m copies and m-n alternations. RE2's simplifications (alternations of literals merged into a class)
 * only make the real program smaller. Malformed text still gets a figure; re2js refuses it when it compiles.
 */

/**
 * The longest pattern text to hand re2js at all, whatever its program: its parser is quadratic in some texts (a class
 * of 32,000 `[:` takes 0.76 s, twice that 3 s), which the program's size does not show.
 */
export const MAX_PATTERN_CHARS = 4096

/** What a figure saturates at: far past any limit, and exact in floating point. */
const CEILING = 2 ** 40

/** A group being read: its finished alternatives, the sequence in progress, and the size of that sequence's last item. */
interface Frame {
  alternatives: number
  sequence: number
  last: number
  capturing: boolean
}

const REPEAT = /^\{(\d+)(,(\d*))?\}/
/** The longest POSIX class name (`[:xdigit:]`, `[:^alpha:]`). */
const MAX_CLASS_NAME = 7

export function regexProgramSize(pattern: string): number {
  const stack: Frame[] = []
  let f: Frame = { alternatives: 0, sequence: 0, last: 0, capturing: false }
  const item = (size: number): void => {
    f.sequence = Math.min(CEILING, f.sequence + size)
    f.last = size
  }
  /** Replaces the last item by its repetition, `copies` times plus `extra` instructions. */
  const repeat = (copies: number, extra: number): void => {
    const size = Math.min(CEILING, f.last * copies + extra)
    f.sequence = Math.min(CEILING, f.sequence - f.last + size)
    f.last = size
  }
  // An empty alternative (`a|`, `()`) compiles to an instruction of its own.
  const close = (): number => f.alternatives + Math.max(1, f.sequence) + (f.capturing ? 2 : 0)
  let i = 0
  while (i < pattern.length) {
    const c = pattern[i]!
    if (c === '\\') {
      const next = pattern[i + 1]
      if (next === 'Q') {
        const end = pattern.indexOf('\\E', i + 2)
        const stop = end < 0 ? pattern.length : end
        for (let k = i + 2; k < stop; k++) item(1)
        i = end < 0 ? pattern.length : end + 2
        continue
      }
      i += 2
      // \p{Greek}, \x{10FFFF}: the braces belong to the escape.
      if ((next === 'p' || next === 'P' || next === 'x') && pattern[i] === '{') {
        const end = pattern.indexOf('}', i)
        i = end < 0 ? pattern.length : end + 1
      }
      item(1)
    } else if (c === '[') {
      i = classEnd(pattern, i)
      item(1)
    } else if (c === '(') {
      let capturing = true
      if (pattern[i + 1] === '?') {
        const named = pattern.startsWith('?P<', i + 1) || (pattern[i + 2] === '<' && pattern[i + 3] !== '=' && pattern[i + 3] !== '!')
        if (!named) {
          // `(?i)` sets flags for the rest of the group; `(?i:...)` and `(?:...)` group without capturing.
          let k = i + 2
          while (k < pattern.length && pattern[k] !== ')' && pattern[k] !== ':') k++
          if (pattern[k] === ')') {
            i = k + 1
            continue
          }
          capturing = false
          i = k + 1
          stack.push(f)
          f = { alternatives: 0, sequence: 0, last: 0, capturing }
          continue
        }
      }
      i++
      stack.push(f)
      f = { alternatives: 0, sequence: 0, last: 0, capturing }
    } else if (c === ')') {
      i++
      const parent = stack.pop()
      if (parent === undefined) {
        item(1)
        continue
      }
      const size = close()
      f = parent
      item(size)
    } else if (c === '|') {
      i++
      f.alternatives = Math.min(CEILING, f.alternatives + Math.max(1, f.sequence) + 1)
      f.sequence = 0
      f.last = 0
    } else if (c === '*' || c === '+' || c === '?') {
      i++
      if (pattern[i] === '?') i++
      repeat(1, c === '*' ? 2 : 1)
    } else if (c === '{' && REPEAT.test(pattern.slice(i, i + 24))) {
      const m = REPEAT.exec(pattern.slice(i, i + 24))!
      i += m[0].length
      if (pattern[i] === '?') i++
      // re2js refuses a count over 1,000; counted as read, so the figure is only ever too large.
      const min = Number(m[1])
      if (m[2] === undefined) repeat(min, 0)
      else if (m[3] === '') repeat(Math.max(1, min), 2)
      else repeat(Math.max(min, Number(m[3])), Math.max(0, Number(m[3]) - min))
    } else {
      i++
      item(1)
    }
  }
  // Groups left open: re2js refuses the pattern; counted as if closed.
  while (stack.length > 0) {
    const size = close()
    f = stack.pop()!
    item(size)
  }
  // The match instruction and the unanchored search's loop.
  return Math.min(CEILING, close() + 2)
}

/** The index just past the class that starts at `start` (`[`): a leading `]` or `^]` is a member, `[:alpha:]` a part. */
function classEnd(pattern: string, start: number): number {
  let i = start + 1
  if (pattern[i] === '^') i++
  if (pattern[i] === ']') i++
  while (i < pattern.length) {
    const c = pattern[i]!
    if (c === '\\') i += 2
    else if (c === '[' && pattern[i + 1] === ':') {
      // Looked for within a class name's length only: searching the rest of the text at every `[:` is quadratic.
      const end = pattern.slice(i + 2, i + 2 + MAX_CLASS_NAME + 2).indexOf(':]')
      i = end < 0 ? i + 1 : i + 2 + end + 2
    } else if (c === ']') return i + 1
    else i++
  }
  return pattern.length
}
