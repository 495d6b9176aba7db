import { Backoff } from '../core/backoff.js'
import { errorMessage, ParleyError } from '../core/errors.js'
import type { Data, DatatypeRef } from '../model/index.js'
import { INLINE_CHECK_STEPS, INLINE_STEPS, ValidationOverflow, type StepAllowance } from './validation-budget.js'
import { ValidationWorker } from './validation-offthread.js'
import type { DatatypeSchema } from './validation-schema.js'
import { schemaVerdict, type Verdict } from './validation-verdict.js'
import type { JobOutcome, VerdictJob } from './validation-worker.js'

/**
 * Looks a datatype up by namespace, name and version; answers a function that checks a value against its schema,
 * and where the datatype's definition stands in chain order (see Datatype.orderedAt).
 */
export type DatatypeLookup = (namespace: string, name: string, version: string) => DatatypeCheck | undefined

export interface DatatypeCheck {
  /** Ajv's words for what is wrong with a value (its JSON text), or undefined. */
  check: (valueRaw: string) => string | undefined
  orderedAt: number
  /**
   * The compiled schema and its text, for a datatype that was defined: checked within its step budget, and off the
   * main thread when that budget is large. A lookup without it (a stand-in) is checked with `check`, inline.
   */
  schema?: { compiled: DatatypeSchema; raw: string }
}

/** Checks data against its datatype; the data capability provides it. */
export interface DataValidator {
  /**
   * At send and upload (and on receipt of an unpinned message): checks every item, throwing the first failure in item
   * order. Items of one datatype and value are checked once. When the budgets of what is checked together exceed what
   * may run on the main thread, they are checked in the validation worker.
   */
  validateAll(namespace: string, items: readonly Data[]): Promise<void>
  /**
   * On receipt, inside the aggregator's transaction. `orderedBefore` is the message's place in chain order: a
   * datatype defined after it does not count. Checks inline what fits in `allowance`; anything else goes to the
   * worker and this answers why the message must wait (the aggregator is woken when the verdict is ready).
   * Undefined: the value conforms. Throws as validate does.
   */
  validateOnReceipt(namespace: string, d: Data, orderedBefore: number, allowance: StepAllowance): string | undefined
  /** Starts off-thread checks of these items now (one job), so that a batch's verdicts come back together. */
  prefetch(namespace: string, items: Iterable<Data>): void
  /** Throws UNKNOWN_DATATYPE unless the datatype exists here: lets an upload fail before its blob is read. */
  requireDatatype(namespace: string, validator: string, datatype: DatatypeRef): void
  stop(): Promise<void>
}

export interface DataValidatorOptions {
  /** Told when off-thread verdicts for received data are ready (or when checking them may be tried again). */
  settled?: () => void
  worker?: ValidationWorker
}

/** What one item needs checked: its datatype and value, and what checks it. */
interface Target {
  datatype: DatatypeRef
  valueRaw: string
  found: DatatypeCheck
}

/**
 * Off-thread verdicts of received data kept until the pass that asked for them uses them. The aggregator asks for at
 * most a thousand at a time per batch; past this bound the oldest unused ones go (their checks would run again).
 */
const MAX_KEPT_VERDICTS = 4096

/**
 * Checks data against its validator and datatype, at send time and again on every receiving member: the same rules
 * and the same code everywhere (validation-verdict.ts), so a member that skipped its own check is caught by the
 * others, and where the check ran (this thread or the worker) never changes the verdict.
 */
export class DataValidatorImpl implements DataValidator {
  private readonly worker: ValidationWorker
  private readonly kept = new Map<string, Verdict>()
  private readonly inFlight = new Set<string>()
  private readonly retry = new Backoff(1000, 30_000)
  private lastFailure: string | undefined

  constructor(
    private readonly lookup: DatatypeLookup,
    private readonly options: DataValidatorOptions = {},
  ) {
    this.worker = options.worker ?? new ValidationWorker()
  }

  /**
   * Checks on this thread, whatever it costs (within the step budget): for tools and tests. `orderedBefore`: see
   * validateOnReceipt.
   */
  validate(namespace: string, d: Data, orderedBefore?: number): void {
    const t = this.target(namespace, d, orderedBefore)
    if (!t) return
    const v = inline(t)
    if (!v) throw unavailable('the check ran out of stack on this thread')
    throwIfFailed(v)
  }

  async validateAll(namespace: string, items: readonly Data[]): Promise<void> {
    // Each item's target first, in item order: the first one no check is needed to refuse is what is thrown.
    const each = shared(namespace, items, items.map((d) => this.target(namespace, d)))
    const targets = [...new Set(each.filter((t): t is Target => t !== undefined))]
    const here = targets.reduce((n, t) => n + budgetOf(t), 0) <= INLINE_STEPS
    const verdicts = new Map<Target, Verdict>()
    for (const t of targets) {
      if (!here && t.found.schema) continue
      const v = inline(t)
      if (v) verdicts.set(t, v)
    }
    // What did not run here (too costly together, or out of stack) runs in the worker, as one job.
    const rest = targets.filter((t) => !verdicts.has(t))
    if (rest.length > 0) {
      let outcomes: JobOutcome[]
      try {
        outcomes = await this.worker.run(rest.map(job))
      } catch (err) {
        throw unavailable(errorMessage(err), err)
      }
      rest.forEach((t, i) => {
        const o = outcomes[i]!
        if ('error' in o) throw unavailable(o.error)
        verdicts.set(t, o)
      })
    }
    for (const t of each) if (t) throwIfFailed(verdicts.get(t)!)
  }

  validateOnReceipt(namespace: string, d: Data, orderedBefore: number, allowance: StepAllowance): string | undefined {
    const t = this.target(namespace, d, orderedBefore)
    if (!t) return undefined
    const key = keyOf(namespace, t, d)
    const kept = this.kept.get(key)
    if (kept) {
      // Used once: the message is decided now (were its pass to fail, the check would run again).
      this.kept.delete(key)
      return throwIfFailed(kept)
    }
    if (!t.found.schema || allowance.fits(budgetOf(t))) {
      const v = inline(t)
      if (v) {
        allowance.spend(inlineCost(t, v))
        return throwIfFailed(v)
      }
    }
    this.submit(namespace, [d])
    return this.lastFailure
      ? `data ${d.id} is checked off the main thread, which failed (${this.lastFailure}); trying again`
      : `data ${d.id} is being checked against datatype ${t.datatype.name}/${t.datatype.version} off the main thread`
  }

  prefetch(namespace: string, items: Iterable<Data>): void {
    this.submit(namespace, items)
  }

  requireDatatype(namespace: string, validator: string, datatype: DatatypeRef): void {
    if (validator !== 'none') this.checker(namespace, datatype)
  }

  stop(): Promise<void> {
    return this.worker.stop()
  }

  /** What `d` needs checked, or undefined when it needs no schema check; throws what no check is needed to know. */
  private target(namespace: string, d: Data, orderedBefore?: number): Target | undefined {
    if (d.validator === 'none') return undefined
    if (d.validator !== 'json') throw new ParleyError('INVALID_FIELD', `validator ${JSON.stringify(d.validator)} is not json or none`)
    if (!d.datatype) return undefined
    const found = this.checker(namespace, d.datatype, orderedBefore)
    if (d.value === null) throw new ParleyError('SCHEMA_VALIDATION_FAILED', `data ${d.id} names datatype ${d.datatype.name}/${d.datatype.version} but has no value`)
    return { datatype: d.datatype, valueRaw: d.value, found }
  }

  private checker(namespace: string, dt: DatatypeRef, orderedBefore?: number): DatatypeCheck {
    const found = this.lookup(namespace, dt.name, dt.version)
    if (!found) throw new ParleyError('UNKNOWN_DATATYPE', `datatype ${dt.name}/${dt.version} is not defined in namespace ${namespace}`)
    if (orderedBefore !== undefined && found.orderedAt >= orderedBefore) {
      throw new ParleyError('UNKNOWN_DATATYPE', `datatype ${dt.name}/${dt.version} was defined in namespace ${namespace} only after this message, in chain order`)
    }
    return found
  }

  /** Sends the received items that have a datatype here and no verdict yet to the worker, as one job. */
  private submit(namespace: string, items: Iterable<Data>): void {
    const keys: string[] = []
    const jobs: VerdictJob[] = []
    const asked = new Set<string>()
    for (const d of items) {
      let t: Target | undefined
      try {
        t = this.target(namespace, d)
      } catch {
        // Unknown here yet, or failing without a schema check: the pass decides that itself.
        continue
      }
      if (!t?.found.schema) continue
      const key = keyOf(namespace, t, d)
      if (this.kept.has(key) || this.inFlight.has(key) || asked.has(key)) continue
      asked.add(key)
      keys.push(key)
      jobs.push(job(t))
    }
    if (jobs.length === 0) return
    for (const k of keys) this.inFlight.add(k)
    this.worker.run(jobs).then(
      (outcomes) => {
        let failure: string | undefined
        keys.forEach((k, i) => {
          const o = outcomes[i]!
          if ('error' in o) {
            this.inFlight.delete(k)
            failure = o.error
          } else this.keep(k, o)
        })
        if (failure === undefined) {
          this.retry.reset()
          this.lastFailure = undefined
          this.options.settled?.()
        } else this.failed(failure)
      },
      (err: unknown) => {
        for (const k of keys) this.inFlight.delete(k)
        this.failed(errorMessage(err))
      },
    )
  }

  /** No verdict this time (never a verdict): the aggregator is woken after a while, and asks again. */
  private failed(why: string): void {
    this.lastFailure = why
    this.retry.failed(why)
    setTimeout(() => this.options.settled?.(), this.retry.next()).unref()
  }

  private keep(key: string, v: Verdict): void {
    this.inFlight.delete(key)
    this.kept.set(key, v)
    if (this.kept.size > MAX_KEPT_VERDICTS) this.kept.delete(this.kept.keys().next().value!)
  }
}

/**
 * `targets` (one per item, in item order) with each repeated one replaced by its first: a message may refer to one data
 * item a thousand times, or carry copies of it, and each check costs a pass over the value (and a copy of it to the
 * worker). A verdict is fixed by the datatype and the value, so every item sharing a target gets the verdict it would
 * get alone. Shared by data hash (a long text is not a cheap Map key), and only when the values are the same text too:
 * a hash nobody verified cannot make an item take another's verdict.
 */
function shared(namespace: string, items: readonly Data[], targets: readonly (Target | undefined)[]): (Target | undefined)[] {
  const first = new Map<string, Target>()
  return targets.map((t, i) => {
    if (!t) return undefined
    const key = keyOf(namespace, t, items[i]!)
    const seen = first.get(key)
    if (seen?.valueRaw === t.valueRaw) return seen
    if (!seen) first.set(key, t)
    return t
  })
}

/** The verdict reached on this thread, or undefined when the stack ran out first (then only the worker decides). */
function inline(t: Target): Verdict | undefined {
  const schema = t.found.schema
  try {
    if (schema) return schemaVerdict(t.datatype, (raw) => schema.compiled.check(raw), t.valueRaw)
    return schemaVerdict(t.datatype, (raw) => ({ problem: t.found.check(raw), steps: 0 }), t.valueRaw)
  } catch (err) {
    if (err instanceof ValidationOverflow) return undefined
    throw err
  }
}

/** What an inline check took from a pass's allowance: its steps, and reading the value (parse, depth scan). */
const inlineCost = (t: Target, v: Verdict): number => v.steps + INLINE_CHECK_STEPS + Math.ceil(t.valueRaw.length / 4)

const budgetOf = (t: Target): number => t.found.schema?.compiled.budget(t.valueRaw) ?? 0

const job = (t: Target): VerdictJob => ({ schemaRaw: t.found.schema!.raw, datatype: t.datatype, valueRaw: t.valueRaw })

// A confirmed datatype never changes, and a data hash covers the value: together they fix the verdict.
const keyOf = (namespace: string, t: Target, d: Data): string => JSON.stringify([namespace, t.datatype.name, t.datatype.version, d.hash])

const unavailable = (why: string, cause?: unknown): ParleyError =>
  new ParleyError('UNAVAILABLE', `the data could not be validated here (${why}); try again`, cause === undefined ? undefined : { cause })

function throwIfFailed(v: Verdict): undefined {
  if (v.failure !== undefined) throw new ParleyError('SCHEMA_VALIDATION_FAILED', v.failure)
  return undefined
}
