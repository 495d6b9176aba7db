import { expect } from 'chai'
import { ParleyError } from '../../node/core/errors.js'
import { parseJsonRaw } from '../../node/core/json.js'
import { MAX_IDEMPOTENCY_KEY, parseMessageInput } from '../../node/messaging/input.js'

describe('message input limits', () => {
  const body = (idempotencyKey: string) => parseJsonRaw(JSON.stringify({ data: [{ value: 1 }], idempotencyKey }))

  it(`takes an idempotency key of up to ${MAX_IDEMPOTENCY_KEY} characters and refuses a longer one, naming the limit`, () => {
    expect(parseMessageInput(body('k'.repeat(MAX_IDEMPOTENCY_KEY)), { allowGroup: false }).idempotencyKey).to.have.length(MAX_IDEMPOTENCY_KEY)
    let err: unknown
    try {
      parseMessageInput(body('k'.repeat(1024 * 1024)), { allowGroup: false })
    } catch (e) {
      err = e
    }
    expect(err).to.be.instanceOf(ParleyError)
    expect((err as ParleyError).code).to.equal('INVALID_FIELD')
    // The refusal names the limit, and does not echo a megabyte of key back.
    expect((err as ParleyError).message).to.equal(`idempotencyKey is ${1024 * 1024} characters long; at most ${MAX_IDEMPOTENCY_KEY}`)
  })
})
