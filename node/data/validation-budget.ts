/**
 * The deterministic cost bound of checking one value against a datatype.
 *
 * Work is counted in steps, by code the schema compiles into (validation-steps.ts, validation-unique-items.ts): each
 * evaluation of a subschema costs its weight (one, plus one per keyword and per entry of its lists and maps), strings
 * and object keys cost in proportion to their length where a keyword reads them (patterns and formats most), failures
 * held cost in proportion to their number, and `uniqueItems` costs eight steps an item plus one per 8 characters of
 * it. Weights are calibrated so that a step takes 5 to 75 ns whatever the keyword. The count depends only on the
 * schema and the value, never on the machine or the clock: every member stops at the same step and reaches the same
 * verdict.
 *
 * The budget grows with the value: realistic data (arrays of records under an ordinary schema) takes 0.1 to 5 steps
 * a character; the budget allows 32, plus the schema's own weight and a base for small values.
 */

/** Every value may take this many steps, whatever its size. */
export const BASE_STEPS = 20_000

/** And this many more per character of its JSON text. */
export const STEPS_PER_CHAR = 32

/**
 * How many failed checks a validation may hold at once. Failures inside `anyOf` branches are kept until a branch
 * passes, and each is an object in memory: a bound on them is a bound on memory, where the step budget alone would
 * allow gigabytes. Ordinary schemas hold a handful.
 */
export const MAX_HELD_FAILURES = 10_000

/**
 * How much stack nested validate functions may hold, in units of about 230 bytes: a function takes one unit, and one
 * more per 6,400 characters of the code Ajv generated for it (its frame grows with its locals). Values nest at most
 * MAX_VALIDATED_DEPTH deep, and an ordinary recursive schema takes a unit or two per level; a `$ref` cycle that never
 * descends into the value (`{"anyOf":[{"$ref":"#"}]}`) would otherwise recurse until the stack runs out, at a depth
 * that differs between threads and processes. Measured, the main thread runs out near 4,300 units; this leaves room
 * for the callers below and for the keywords' own work at the top.
 */
export const MAX_STACK_UNITS = 1500

/** Characters of generated code per stack unit of a validate function. */
export const CODE_CHARS_PER_STACK_UNIT = 6400

/**
 * How many steps may run on the main thread at a stretch: a send whose checks could take more runs them in a worker
 * thread, and the aggregator sends a pass's checks there once this much is used. At most about 40 ms at the slowest
 * step rate measured (~75 ns, a large `enum`); typically a few ms.
 */
export const INLINE_STEPS = 500_000

/** What an inline check costs besides its steps (the lookup, the call, the parse of a tiny value). */
export const INLINE_CHECK_STEPS = 100

/** The step budget for a value of `chars` characters under a schema whose subschemas weigh `schemaWeight` in all. */
export function stepBudget(chars: number, schemaWeight: number): number {
  return BASE_STEPS + schemaWeight + STEPS_PER_CHAR * chars
}

/** Why a validation stopped before its verdict: a bound every member applies alike. */
export type Exhausted = { kind: 'steps'; budget: number } | { kind: 'failures'; held: number } | { kind: 'stack'; limit: number }

/** Thrown through Ajv's generated code to stop a validation at once; caught by the schema's check. */
export class ValidationStopped {
  constructor(readonly why: Exhausted) {}
}

/**
 * The stack ran out before any bound stopped the check: where that happens differs between threads, so it is never
 * a verdict. The validator runs the check again in the worker, whose stack is far larger.
 */
export class ValidationOverflow extends Error {
  override readonly name = 'ValidationOverflow'
}

/**
 * The counter one compiled schema's code charges. A validation is synchronous and a schema's validations never
 * overlap, so one meter per compiled schema, armed before each run, is exact.
 */
export class StepMeter {
  steps = 0
  limit = Number.POSITIVE_INFINITY
  /** Stack units held by the validate functions currently running, one inside the other. */
  stack = 0

  /** Starts a run that may take `limit` steps. */
  arm(limit: number): void {
    this.steps = 0
    this.stack = 0
    this.limit = limit
  }

  /** Unbounded: for callers outside a verdict (tests, definitions' compile checks). */
  disarm(): void {
    this.steps = 0
    this.stack = 0
    this.limit = Number.POSITIVE_INFINITY
  }

  /** Called by generated code once the count passed the limit, or too many failures are held. */
  stop(heldFailures: number): never {
    if (this.steps > this.limit) throw new ValidationStopped({ kind: 'steps', budget: this.limit })
    throw new ValidationStopped({ kind: 'failures', held: heldFailures })
  }

  /** Called by generated code on entering a validate function that would hold more than MAX_STACK_UNITS. */
  tooDeep(): never {
    throw new ValidationStopped({ kind: 'stack', limit: MAX_STACK_UNITS })
  }

  /** Adds `n` steps, stopping the run when past the limit (for keyword code written in TypeScript). */
  charge(n: number): void {
    if ((this.steps += n) > this.limit) this.stop(0)
  }
}

/**
 * How many steps a main-thread stretch may still spend on checks: a check runs inline only if its whole budget fits,
 * and what it actually used is taken off.
 */
export class StepAllowance {
  constructor(private left: number = INLINE_STEPS) {}

  get remaining(): number {
    return this.left
  }

  fits(budget: number): boolean {
    return budget <= this.left
  }

  spend(steps: number): void {
    this.left = Math.max(0, this.left - steps)
  }
}
