import { expect } from 'chai'
import { isParleyError } from '../../../../node/core/errors.js'
import { newId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { INLINE_STEPS, StepAllowance } from '../../../../node/data/validation-budget.js'
import { ValidationWorker } from '../../../../node/data/validation-offthread.js'
import { compileDatatypeSchema } from '../../../../node/data/validation-schema.js'
import { schemaVerdict } from '../../../../node/data/validation-verdict.js'
import type { JobOutcome, VerdictJob } from '../../../../node/data/validation-worker.js'
import { DataValidatorImpl, type DatatypeCheck } from '../../../../node/data/validator.js'
import type { Data } from '../../../../node/model/index.js'

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth)
const RECURSIVE = '{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}'
const EXPONENTIAL = '{"$defs":{"n":{"type":"array","anyOf":[{"allOf":[{"items":{"$ref":"#/$defs/n"}},false]},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}'
const RECORDS = '{"type":"array","items":{"type":"object","required":["id","name"],"additionalProperties":false,"properties":{"id":{"type":"integer","minimum":0},"name":{"type":"string","maxLength":8}}}}'

/** [schema, value] pairs covering every kind of verdict. */
const CASES: [string, string][] = [
  [RECORDS, JSON.stringify(Array.from({ length: 5000 }, (_, i) => ({ id: i, name: `n${i % 100}` })))],
  [RECORDS, '[{"id":-1,"name":"much too long","extra":true},{"name":3}]'],
  ['{"type":"array","uniqueItems":true}', JSON.stringify(Array.from({ length: 20_000 }, (_, i) => ({ i })))],
  ['{"type":"array","uniqueItems":true}', JSON.stringify([...Array.from({ length: 20_000 }, (_, i) => ({ i })), { i: 3 }])],
  ['{"type":"string","pattern":"^(a+)+$"}', JSON.stringify('a'.repeat(33) + 'b')],
  ['{"type":"string","pattern":"^(a+)+$"}', JSON.stringify('a'.repeat(40))],
  [RECURSIVE, nested(512)],
  [RECURSIVE, nested(600)],
  [EXPONENTIAL, nested(60)],
  ['{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}', '[[1]]'],
  ['{"type":"object"}', '{"a":'],
]

const datatype = { name: 'dt', version: '1' }

/**
 * A worker that records what it was asked. One for the whole file, since its thread's start (the worker's modules
 * through tsx) is most of a test's time: a validator's stop leaves it running, `end` stops it after the last suite.
 */
class CountingWorker extends ValidationWorker {
  jobs: VerdictJob[] = []
  override run(jobs: VerdictJob[]): Promise<JobOutcome[]> {
    this.jobs.push(...jobs)
    return super.run(jobs)
  }
  override stop(): Promise<void> {
    return Promise.resolve()
  }
  end(): Promise<void> {
    return super.stop()
  }
}

const worker = new CountingWorker()
after(() => worker.end())

describe('validation: in the worker thread, the same verdicts as inline', function () {
  this.timeout(60_000)

  it('reaches the same verdict, with the same words and the same step count, for every kind of case', async () => {
    const inline = CASES.map(([schemaRaw, valueRaw]) => {
      const schema = compileDatatypeSchema(schemaRaw)
      return schemaVerdict(datatype, (r) => schema.check(r), valueRaw)
    })
    const jobs: VerdictJob[] = CASES.map(([schemaRaw, valueRaw]) => ({ schemaRaw, datatype, valueRaw }))
    const offThread = await worker.run(jobs)
    expect(offThread).to.deep.equal(inline)
    // The cases do cover each kind.
    const failures = inline.map((v) => v.failure ?? 'valid')
    for (const kind of ['valid', 'does not conform', 'duplicate items', 'nests deeper than 512', 'needs more than', 'stack units']) {
      expect(failures.some((f) => f.includes(kind)), kind).to.equal(true)
    }
  })

  it('answers why, not a verdict, for a job it could not check', async () => {
    const [outcome] = await worker.run([{ schemaRaw: '{"type":"nope"}', datatype, valueRaw: '1' }])
    expect(outcome).to.have.property('error').that.matches(/not a valid JSON Schema/)
  })
})

describe('validation: where a check runs', function () {
  this.timeout(60_000)

  const schemaRaw = '{"type":"array","items":{"type":"integer","maximum":100}}'
  const compiled = compileDatatypeSchema(schemaRaw)
  const lookup = (): DatatypeCheck => ({ check: () => undefined, orderedAt: 0, schema: { compiled, raw: schemaRaw } })
  const item = (value: string): Data => ({ id: newId<DataId>(), validator: 'json', namespace: 'ns', hash: dataHash({ valueRaw: value }), created: now(), datatype, value })
  const problemOf = async (f: () => Promise<void>): Promise<string> => {
    try {
      await f()
      return 'valid'
    } catch (err) {
      return isParleyError(err) ? `${err.code}: ${err.message}` : String(err)
    }
  }
  const small = JSON.stringify([1, 2, 300])
  const large = JSON.stringify([...Array.from({ length: 100_000 }, (_, i) => i % 100), 300])

  let validator: DataValidatorImpl
  let settled: number
  beforeEach(() => {
    worker.jobs = []
    settled = 0
    validator = new DataValidatorImpl(lookup, { worker, settled: () => settled++ })
  })
  afterEach(() => validator.stop())

  it('at send: a cheap lot inline, a costly one (by its budget) in the worker, with the same refusal either way', async () => {
    expect(compiled.budget(small)).to.be.below(INLINE_STEPS)
    expect(compiled.budget(large)).to.be.above(INLINE_STEPS)
    const inlineSmall = await problemOf(() => validator.validateAll('ns', [item(small)]))
    expect(worker.jobs).to.have.length(0)
    const offLarge = await problemOf(() => validator.validateAll('ns', [item(large)]))
    expect(worker.jobs).to.have.length(1)
    expect(inlineSmall).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype dt/1: /2 must be <= 100')
    expect(offLarge).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype dt/1: /100000 must be <= 100')
    // What the worker said is what this thread says about the same value.
    expect(offLarge).to.equal(await problemOf(async () => validator.validate('ns', item(large))))
    // Many cheap items together are costly: they go as one job, and the first failure in item order is reported.
    const many = Array.from({ length: 40 }, (_, i) => item(JSON.stringify(i === 30 ? [101] : [i])))
    expect(await problemOf(() => validator.validateAll('ns', many))).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype dt/1: /0 must be <= 100')
    expect(worker.jobs).to.have.length(41)
  })

  it('at send: checks each distinct (datatype, value) once per call, and gives every item that shares it the same verdict', async () => {
    const valid = JSON.stringify(Array.from({ length: 100_000 }, (_, i) => i % 100))
    expect(compiled.budget(valid)).to.be.above(INLINE_STEPS)
    const good = item(valid)
    const bad = item(large)
    // One item referred to many times over (as a message's data refs may), and a copy of it under another id.
    const lot = [...Array<Data>(100).fill(good), { ...good, id: newId<DataId>() }, ...Array<Data>(100).fill(bad)]
    expect(await problemOf(() => validator.validateAll('ns', lot))).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype dt/1: /100000 must be <= 100')
    expect(worker.jobs.map((j) => j.valueRaw.length)).to.deep.equal([valid.length, large.length])
    // Cheap items, costly only together while repeated: checked once, here, with the refusal the worker would give.
    worker.jobs = []
    expect(await problemOf(() => validator.validateAll('ns', Array<Data>(40).fill(item(small))))).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype dt/1: /2 must be <= 100')
    expect(worker.jobs).to.have.length(0)
    // Shared only with the same value: an item claiming another's hash keeps its own verdict.
    expect(await problemOf(() => validator.validateAll('ns', [good, { ...item(small), hash: good.hash }]))).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype dt/1: /2 must be <= 100')
  })

  it('on receipt: within the pass\'s allowance inline, beyond it a wait until the worker\'s verdict is kept', async () => {
    const allowance = new StepAllowance()
    const cheap = item(JSON.stringify([1, 2, 3]))
    expect(validator.validateOnReceipt('ns', cheap, 10, allowance)).to.equal(undefined)
    expect(allowance.remaining).to.be.below(INLINE_STEPS)

    const costly = item(large)
    const wait = validator.validateOnReceipt('ns', costly, 10, allowance)
    expect(wait).to.match(/being checked against datatype dt\/1 off the main thread/)
    // Asking again while it runs sends nothing more.
    validator.validateOnReceipt('ns', costly, 10, allowance)
    expect(worker.jobs).to.have.length(1)
    while (settled === 0) await new Promise((r) => setTimeout(r, 20))
    // The kept verdict: the same refusal as inline, now answered at once.
    let refusal = ''
    try {
      validator.validateOnReceipt('ns', costly, 10, new StepAllowance(0))
    } catch (err) {
      refusal = String((err as Error).message)
    }
    expect(refusal).to.equal('data does not conform to datatype dt/1: /100000 must be <= 100')

    // A spent allowance sends even a cheap check to the worker; the batch's other items go along with it.
    const spent = new StepAllowance(0)
    const others = [item('[4]'), item('[5]')]
    expect(validator.validateOnReceipt('ns', others[0]!, 10, spent)).to.match(/off the main thread/)
    validator.prefetch('ns', others)
    expect(worker.jobs).to.have.length(3)
  })
})
