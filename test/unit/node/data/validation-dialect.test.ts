import { expect } from 'chai'
import { isParleyError } from '../../../../node/core/errors.js'
import { HTTP_STATUS } from '../../../../node/api/errors.js'
import { dialectOf, DRAFT_07, DRAFT_2019_09, DRAFT_2020_12 } from '../../../../node/data/validation-dialect.js'

/** The error dialectOf throws for `$schema`, checked to be a 400 for the caller. */
function refusal($schema: unknown): string {
  try {
    dialectOf({ $schema })
  } catch (err) {
    if (!isParleyError(err, 'INVALID_FIELD')) throw err
    expect(HTTP_STATUS[err.code]).to.equal(400)
    return err.message
  }
  throw new Error(`${JSON.stringify($schema)} was accepted`)
}

describe('datatype schema dialects', () => {
  it('reads a schema without $schema as 2020-12, as FireFly does', () => {
    expect(dialectOf({ type: 'object' })).to.equal(DRAFT_2020_12)
  })

  it('names each dialect by its meta-schema URI, http or https, with or without an empty fragment', () => {
    const cases: [string, unknown][] = [
      ['http://json-schema.org/draft-07/schema#', DRAFT_07],
      ['http://json-schema.org/draft-07/schema', DRAFT_07],
      ['https://json-schema.org/draft-07/schema#/', DRAFT_07],
      ['https://json-schema.org/draft/2019-09/schema', DRAFT_2019_09],
      ['http://json-schema.org/draft/2019-09/schema#', DRAFT_2019_09],
      ['https://json-schema.org/draft/2020-12/schema', DRAFT_2020_12],
      ['https://json-schema.org/schema', DRAFT_2020_12],
    ]
    for (const [uri, dialect] of cases) expect(dialectOf({ $schema: uri }), uri).to.equal(dialect)
  })

  it('refuses an unknown dialect with a 400 that says which ones it takes', () => {
    for (const uri of ['https://example.com/my-meta-schema', 'draft-07', 'https://json-schema.org/draft-07/schema#/definitions', 'HTTP://json-schema.org/draft-07/schema#']) {
      expect(refusal(uri), uri).to.match(/names no known JSON Schema dialect; use draft-07 .* 2019-09 .* 2020-12/)
    }
  })

  it('refuses draft-06 and draft-04 by name, as dialects not supported here', () => {
    expect(refusal('http://json-schema.org/draft-06/schema#')).to.match(/not supported here; use draft-07/)
    expect(refusal('http://json-schema.org/draft-04/schema#')).to.match(/not supported here/)
  })

  it('refuses a $schema that is not a string', () => {
    for (const v of [7, null, ['http://json-schema.org/draft-07/schema#'], {}]) expect(refusal(v), JSON.stringify(v)).to.match(/must be a string/)
  })
})
