import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { dataHash } from '../../../../node/core/hashes.js'
import type { DataId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { StepAllowance } from '../../../../node/data/validation-budget.js'
import type { ValidationWorker } from '../../../../node/data/validation-offthread.js'
import { compileDatatypeSchema } from '../../../../node/data/validation-schema.js'
import type { JobOutcome, VerdictJob } from '../../../../node/data/validation-worker.js'
import { DataValidatorImpl, type DatatypeCheck } from '../../../../node/data/validator.js'
import type { Data } from '../../../../node/model/index.js'

const SCHEMA = '{"type":"string","maxLength":30000}'
const widget = { name: 'widget', version: '1' }
const item = (over: Partial<Data> = {}): Data => {
  const value = over.value === undefined ? '"ok"' : over.value
  const hash = over.hash ?? dataHash({ valueRaw: value })
  return { id: `00000000-0000-4000-8000-${String(Math.floor(Math.random() * 1e12)).padStart(12, '0')}` as DataId, validator: 'json', namespace: 'default', hash, created: now(), value, datatype: widget, ...over }
}
/** A value whose step budget is over what runs on the main thread: it is checked in the worker. */
const costly = (c = 'v'): string => JSON.stringify(c.repeat(20_000))

async function refusal(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p)
  } catch (err) {
    expect(err).to.be.instanceOf(ParleyError)
    return `${(err as ParleyError).code}: ${(err as ParleyError).message}`
  }
  return 'passed'
}

/**
 * The validator over a datatype lookup and a validation worker of the test's own (its seams): what is refused before
 * any check, and what happens when the worker cannot answer.
 */
describe('data validator: refusals before a check, and a worker that cannot answer', () => {
  let jobs: VerdictJob[][]
  let answer: (jobs: VerdictJob[]) => Promise<JobOutcome[]>
  let settled: number
  const worker = { run: (j: VerdictJob[]) => (jobs.push(j), answer(j)), stop: async () => {} } as unknown as ValidationWorker
  const check: DatatypeCheck = { check: () => undefined, orderedAt: 5, schema: { compiled: compileDatatypeSchema(SCHEMA), raw: SCHEMA } }
  let validator: DataValidatorImpl

  beforeEach(() => {
    jobs = []
    settled = 0
    answer = async (j) => j.map(() => ({ failure: undefined, steps: 1 }))
    validator = new DataValidatorImpl((_ns, name, version) => (name === 'widget' && version === '1' ? check : undefined), { worker, settled: () => settled++ })
  })

  it('refuses an unknown validator, an unknown datatype, one defined after the message, and a datatype without a value', async () => {
    expect(await refusal(() => validator.validate('default', item({ validator: 'xml' })))).to.equal('INVALID_FIELD: validator "xml" is not json or none')
    expect(await refusal(() => validator.validate('default', item({ datatype: { name: 'gadget', version: '1' } })))).to.equal('UNKNOWN_DATATYPE: datatype gadget/1 is not defined in namespace default')
    expect(await refusal(() => validator.validate('default', item(), 5))).to.equal('UNKNOWN_DATATYPE: datatype widget/1 was defined in namespace default only after this message, in chain order')
    const empty = item({ value: null, hash: 'ab'.repeat(32) as Data['hash'] })
    expect(await refusal(() => validator.validate('default', empty))).to.equal(`SCHEMA_VALIDATION_FAILED: data ${empty.id} names datatype widget/1 but has no value`)
    // Nothing to check: validator none, or no datatype.
    expect(await refusal(() => validator.validate('default', item({ validator: 'none', datatype: { name: 'gadget', version: '1' } })))).to.equal('passed')
    expect(await refusal(() => validator.validate('default', item({ datatype: undefined })))).to.equal('passed')
    expect(await refusal(() => validator.validate('default', item(), 6))).to.equal('passed')
  })

  it('requires a datatype to exist only for data a json validator checks', async () => {
    expect(await refusal(() => validator.requireDatatype('default', 'none', { name: 'gadget', version: '1' }))).to.equal('passed')
    expect(await refusal(() => validator.requireDatatype('default', 'json', { name: 'gadget', version: '1' }))).to.equal('UNKNOWN_DATATYPE: datatype gadget/1 is not defined in namespace default')
  })

  it('checks costly items together in the worker, and answers 503 when the worker cannot', async () => {
    const items = [item({ value: costly('a') }), item({ value: costly('b') })]
    expect(await refusal(validator.validateAll('default', items))).to.equal('passed')
    expect(jobs).to.have.length(1)
    expect(jobs[0]).to.have.length(2)
    answer = async () => {
      throw new Error('validation worker crashed: out of memory')
    }
    expect(await refusal(validator.validateAll('default', items))).to.equal('UNAVAILABLE: the data could not be validated here (validation worker crashed: out of memory); try again')
    answer = async (j) => j.map(() => ({ error: 'the check ran out of stack' }))
    expect(await refusal(validator.validateAll('default', items))).to.equal('UNAVAILABLE: the data could not be validated here (the check ran out of stack); try again')
    answer = async (j) => j.map((_, i) => ({ failure: i === 1 ? 'data does not conform to datatype widget/1: too long' : undefined, steps: 1 }))
    expect(await refusal(validator.validateAll('default', items))).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype widget/1: too long')
  })

  it('on receipt, sends what does not fit the allowance to the worker, says why the message waits, and uses the verdict once', async () => {
    const d = item({ value: costly() })
    expect(validator.validateOnReceipt('default', d, 10, new StepAllowance(0))).to.equal(`data ${d.id} is being checked against datatype widget/1 off the main thread`)
    // Asked again while in flight: no second job.
    validator.prefetch('default', [d, item({ validator: 'xml' }), item({ datatype: undefined })])
    expect(jobs).to.have.length(1)
    await new Promise((resolve) => setImmediate(resolve))
    expect(settled).to.equal(1)
    expect(validator.validateOnReceipt('default', d, 10, new StepAllowance(0))).to.equal(undefined)
    // Used once: asked again, it is checked again.
    expect(validator.validateOnReceipt('default', d, 10, new StepAllowance(0))).to.match(/off the main thread$/)
    expect(jobs).to.have.length(2)
  })

  it('on receipt, says the worker failed until it answers again, then gives its verdict', async () => {
    const d = item({ value: costly() })
    answer = async () => {
      throw new Error('the validation worker could not start: no threads left')
    }
    validator.validateOnReceipt('default', d, 10, new StepAllowance(0))
    await new Promise((resolve) => setImmediate(resolve))
    expect(validator.validateOnReceipt('default', d, 10, new StepAllowance(0))).to.equal(
      `data ${d.id} is checked off the main thread, which failed (the validation worker could not start: no threads left); trying again`,
    )
    answer = async (j) => j.map(() => ({ error: 'the check ran out of stack' }))
    await new Promise((resolve) => setImmediate(resolve))
    const other = item({ value: costly('o') })
    validator.validateOnReceipt('default', other, 10, new StepAllowance(0))
    await new Promise((resolve) => setImmediate(resolve))
    expect(validator.validateOnReceipt('default', other, 10, new StepAllowance(0))).to.match(/which failed \(the check ran out of stack\); trying again$/)
    answer = async (j) => j.map(() => ({ failure: 'data does not conform to datatype widget/1: too long', steps: 1 }))
    // The job of the last ask still fails; the next one gets the verdict.
    await new Promise((resolve) => setImmediate(resolve))
    validator.prefetch('default', [other])
    await new Promise((resolve) => setImmediate(resolve))
    expect(await refusal(() => validator.validateOnReceipt('default', other, 10, new StepAllowance(0)))).to.equal('SCHEMA_VALIDATION_FAILED: data does not conform to datatype widget/1: too long')
  })
})
