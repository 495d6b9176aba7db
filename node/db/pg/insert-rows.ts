import type { Step } from './bridge-protocol.js'
import { closingParen, maskLiterals } from './sql-text.js'

/** A single-row INSERT as PostgreSQL runs it, cut around its one VALUES tuple, which alone holds the parameters. */
interface RowShape {
  /** The table written, lower case. */
  table: string
  /** `INSERT INTO t (...) VALUES ` */
  head: string
  /** The tuple's text split at its placeholders: parts[0] $a parts[1] $b ... parts[k]. */
  parts: string[]
  /** Each placeholder's number, in the order they appear. */
  numbers: number[]
  /** ` ON CONFLICT ... DO NOTHING`, or nothing. */
  tail: string
  /** Parameters a row takes ($1..$width). */
  width: number
  /** Statement text and prepared name by row count, made on first use. */
  bySize: Map<number, { text: string; name: string }>
}

/** Row counts a multi-row statement is made with, largest first (as insertRows slices): few texts serve any count. */
const SIZES = [64, 32, 16, 8, 4, 2, 1]

/**
 * Mergeable statement shapes kept at most, and as many texts judged not mergeable: a caller building SQL per call gets
 * no new shape past this (its inserts go one by one). Prepared names are made only for kept shapes, so a connection
 * holds at most MAX_SHAPES x SIZES.length of them (1,792), within statements.ts' MAX_PREPARED.
 */
const MAX_SHAPES = 256

/** Parameters one statement may carry: the protocol counts them in 16 bits, and more cost the connection (08P01). */
const MAX_PARAMETERS = 65_535

/**
 * Multi-row forms of the single-row INSERTs that transaction functions queue (Tx.write), so that the writes of a
 * turn's functions into one table go as a few statements (coalesce.ts). Only an INSERT whose rows cannot see one
 * another is taken: its VALUES tuple reads no table (no SELECT), its table has no trigger (a trigger reading another
 * table would see the rows of the turn's later functions) and is on neither side of a foreign key (a row could find,
 * or miss, a parent row another function wrote), and on a conflict it does nothing or fails (an update could depend
 * on the order of the rows).
 */
export class InsertRows {
  private readonly shapes = new Map<string, RowShape>()
  private readonly refused = new Set<string>()
  private named = 0
  /** Tables with a trigger or a foreign key (their inserts are never merged). */
  private linked: ReadonlySet<string> = new Set()

  /** Read from the schema once it is migrated: what was judged before is judged again. */
  setLinked(tables: Iterable<string>): void {
    this.linked = new Set([...tables].map((t) => t.toLowerCase()))
    this.shapes.clear()
    this.refused.clear()
  }

  /**
   * The table `step` writes when it is a single-row INSERT that may share a statement with others of its text (lower
   * case); nothing when it is not mergeable.
   */
  tableOf(step: Step): string | undefined {
    if (step.values === undefined) return undefined
    const shape = this.shapeOf(step.text)
    return shape?.width === step.values.length ? shape.table : undefined
  }

  /**
   * The statements inserting every row of `steps` (all of one mergeable text), in their order: as few as SIZES allow
   * within MAX_PARAMETERS, their values concatenated.
   */
  merged(steps: readonly Step[], group: number): Step[] {
    const shape = this.shapeOf(steps[0]!.text)!
    if (steps.length === 1) return [{ ...steps[0]!, group }]
    const out: Step[] = []
    let i = 0
    for (const size of SIZES) {
      if (size * shape.width > MAX_PARAMETERS) continue
      while (steps.length - i >= size) {
        const { text, name } = this.formOf(shape, size)
        const values: unknown[] = []
        for (let r = i; r < i + size; r++) for (const v of steps[r]!.values!) values.push(v)
        out.push({ text, values, name, group })
        i += size
      }
    }
    return out
  }

  private formOf(shape: RowShape, size: number): { text: string; name: string } {
    let form = shape.bySize.get(size)
    if (form === undefined) {
      const rows: string[] = []
      for (let r = 0; r < size; r++) {
        let row = shape.parts[0]!
        for (let k = 0; k < shape.numbers.length; k++) row += `$${shape.numbers[k]! + r * shape.width}${shape.parts[k + 1]}`
        rows.push(`(${row})`)
      }
      form = { text: `${shape.head}${rows.join(', ')}${shape.tail}`, name: `parley_rows_${++this.named}` }
      shape.bySize.set(size, form)
    }
    return form
  }

  private shapeOf(text: string): RowShape | undefined {
    const known = this.shapes.get(text)
    if (known !== undefined || this.refused.has(text) || this.shapes.size >= MAX_SHAPES) return known
    const shape = this.parse(text)
    if (shape !== undefined) this.shapes.set(text, shape)
    else if (this.refused.size < MAX_SHAPES) this.refused.add(text)
    return shape
  }

  private parse(text: string): RowShape | undefined {
    const masked = maskLiterals(text)
    const m = /^\s*INSERT\s+INTO\s+(\w+)\s*\([^()]*\)\s*VALUES\s*\(/i.exec(masked)
    if (!m) return undefined
    const table = m[1]!.toLowerCase()
    if (this.linked.has(table)) return undefined
    const open = m.index + m[0].length - 1
    const close = closingParen(masked, open)
    if (close < 0) return undefined
    const tuple = masked.slice(open + 1, close)
    const tail = masked.slice(close + 1)
    if (/\bSELECT\b/i.test(tuple) || /\$\d/.test(tail) || !/^\s*(ON\s+CONFLICT\b[^$]*\bDO\s+NOTHING\s*)?$/i.test(tail)) return undefined
    const parts: string[] = []
    const numbers: number[] = []
    let at = open + 1
    for (const p of tuple.matchAll(/\$(\d+)/g)) {
      parts.push(text.slice(at, open + 1 + p.index))
      numbers.push(Number(p[1]))
      at = open + 1 + p.index + p[0].length
    }
    parts.push(text.slice(at, close))
    const width = Math.max(...numbers)
    if (numbers.length === 0 || width > MAX_PARAMETERS) return undefined
    return { table, head: text.slice(0, open), parts, numbers, tail: text.slice(close + 1), width, bySize: new Map() }
  }
}
