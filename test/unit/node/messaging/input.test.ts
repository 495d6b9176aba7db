import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { jsonNodesBuilt, parseJsonRaw } from '../../../../node/core/json.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { parseMessageInput, type MessageInputLimits } from '../../../../node/messaging/input.js'

function refusal(f: () => unknown): ParleyError {
  try {
    f()
  } catch (e) {
    expect(e).to.be.instanceOf(ParleyError)
    return e as ParleyError
  }
  expect.fail('expected a refusal')
}

describe('message input limits', () => {
  const parse = (body: unknown, limits?: MessageInputLimits) => parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup: false, ...(limits ? { limits } : {}) })
  const limits = (over: Partial<MessageInputLimits>): MessageInputLimits => ({ ...DEFAULT_REQUEST_LIMITS, ...over })
  const max = DEFAULT_REQUEST_LIMITS.idempotencyKeyChars

  it(`takes an idempotency key of up to ${max} characters and refuses a longer one, naming the limit`, () => {
    expect(parse({ data: [{ value: 1 }], idempotencyKey: 'k'.repeat(max) }).idempotencyKey).to.have.length(max)
    const err = refusal(() => parse({ data: [{ value: 1 }], idempotencyKey: 'k'.repeat(1024 * 1024) }))
    expect(err.code).to.equal('INVALID_FIELD')
    // The refusal names the limit, and does not echo a megabyte of key back.
    expect(err.message).to.equal(`idempotencyKey is ${1024 * 1024} characters long; this member accepts at most ${max} characters (limits.idempotencyKeyChars)`)
  })

  it('refuses more data items than the member allows, before reading them, naming the limit', () => {
    const data = Array.from({ length: 4 }, (_, i) => ({ value: i }))
    expect(parse({ data }, limits({ dataPerMessage: 4 })).data).to.have.length(4)
    const err = refusal(() => parse({ data: [...data, { value: 'x' }] }, limits({ dataPerMessage: 4 })))
    expect(err.code).to.equal('INVALID_FIELD')
    expect(err.message).to.equal('data has 5 items; this member accepts at most 4 (limits.dataPerMessage)')
    // The default holds too: 210,000 items is refused at once, counted without building a node for any.
    const body = JSON.stringify({ data: Array.from({ length: 210_000 }, () => ({ value: 1 })) })
    const before = jsonNodesBuilt()
    const many = refusal(() => parseMessageInput(parseJsonRaw(body), { allowGroup: false }))
    expect(many.message).to.match(/data has 210000 items; this member accepts at most 100 \(limits.dataPerMessage\)/)
    expect(jsonNodesBuilt() - before).to.be.lessThan(10)
  })

  it('refuses more topics than the member allows', () => {
    expect(parse({ header: { topics: ['a', 'b'] }, data: [{ value: 1 }] }, limits({ topicsPerMessage: 2 })).header.topics).to.deep.equal(['a', 'b'])
    const err = refusal(() => parse({ header: { topics: ['a', 'b', 'c'] }, data: [{ value: 1 }] }, limits({ topicsPerMessage: 2 })))
    expect(err.message).to.equal('header.topics has 3 topics; this member accepts at most 2 (limits.topicsPerMessage)')
  })

  it('refuses a value larger than the member allows as a 413, counting UTF-8 bytes of the compacted JSON', () => {
    // "é" is two bytes: 3 of them and the quotes are 8 bytes.
    expect(parse({ data: [{ value: 'ééé' }] }, limits({ valueBytes: 8 })).data).to.have.length(1)
    const err = refusal(() => parse({ data: [{ value: 1 }, { value: 'éééé' }] }, limits({ valueBytes: 8 })))
    expect(err.code).to.equal('PAYLOAD_TOO_LARGE')
    expect(err.message).to.equal('data[1].value is 10 bytes as stored (compacted JSON, <, > and & escaped as Go writes them); this member accepts at most 8 bytes (limits.valueBytes)')
    // Counted as stored: each '<' is six bytes once escaped.
    expect(refusal(() => parse({ data: [{ value: '<' }] }, limits({ valueBytes: 7 }))).message).to.match(/^data\[0\].value is 8 bytes as stored/)
  })
})
