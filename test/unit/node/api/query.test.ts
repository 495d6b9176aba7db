import { expect } from 'chai'
import { parseQuery, parsePaging, boolParam, single } from '../../../../node/api/query.js'
import { parseFilter } from '../../../../node/api/filters.js'
import { ParleyError } from '../../../../node/core/errors.js'

function refusal(fn: () => unknown): ParleyError {
  try {
    fn()
  } catch (e) {
    expect(e).to.be.instanceOf(ParleyError)
    return e as ParleyError
  }
  return expect.fail('expected a refusal')
}

/** A string of one Latin-1 character per byte, as Node hands on raw bytes of a request target. */
function latin1(bytes: number[]): string {
  return Buffer.from(bytes).toString('latin1')
}

function utf8Bytes(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1')
}

/** The query string as the routes read it: parsed once by the router, strictly, into an object with no prototype. */
describe('api query strings', () => {
  describe('parseQuery', () => {
    it('has no prototype: __proto__, constructor and toString are parameters like any other', () => {
      const q = parseQuery('__proto__=a&constructor=b&toString=c')
      expect(Object.getPrototypeOf(q)).to.equal(null)
      expect(Object.keys(q)).to.deep.equal(['__proto__', 'constructor', 'toString'])
      expect(q['__proto__']).to.equal('a')
      expect(q['constructor']).to.equal('b')
      // Nothing inherited is read as a parameter.
      expect(parseQuery('')['toString']).to.equal(undefined)
      expect(parseQuery('a=1')['hasOwnProperty']).to.equal(undefined)
    })

    it('a query string that is only a prototype name is that parameter, empty', () => {
      const q = parseQuery('__proto__')
      expect(Object.getPrototypeOf(q)).to.equal(null)
      expect(Object.keys(q)).to.deep.equal(['__proto__'])
      expect(q['__proto__']).to.equal('')
    })

    it('a repeated name is an array of its values in order; a bare name is an empty value', () => {
      const q = parseQuery('tag=a&tag=%40b&x&tag=c&y=')
      expect(q.tag).to.deep.equal(['a', '@b', 'c'])
      expect(q.x).to.equal('')
      expect(q.y).to.equal('')
    })

    it('decodes percent-escapes of UTF-8 and + as a space; the first = splits name from value', () => {
      const q = parseQuery('tag=%E2%9C%93+ok&a%3Db=c%3Dd&expr=>=5&empty=&&')
      expect(q.tag).to.equal('✓ ok')
      expect(q['a=b']).to.equal('c=d')
      expect(q.expr).to.equal('>=5')
      expect(Object.keys(q)).to.deep.equal(['tag', 'a=b', 'expr', 'empty'])
    })

    // curl sends `?tag=café` as the raw bytes of its UTF-8, and Node hands them on one Latin-1 character per byte.
    it('reads raw UTF-8 bytes as the characters they spell, as FireFly (Go) does, beside escapes and in names', () => {
      const q = parseQuery(`tag=${utf8Bytes('café')}&${utf8Bytes('ключ')}=${utf8Bytes('✓')}%20${utf8Bytes('𝄞')}+x&esc=%C3%A9${utf8Bytes('é')}`)
      expect(q.tag).to.equal('café')
      expect(q['ключ']).to.equal('✓ 𝄞 x')
      expect(q.esc).to.equal('éé')
      expect(parseFilter(parseQuery(`tag=!:@${utf8Bytes('Café')}`))).to.deep.equal([[{ field: 'tag', op: 'contains', value: 'Café', not: true, caseInsensitive: true }]])
    })

    it('keeps a raw byte-order mark rather than dropping it', () => {
      expect(parseQuery(`tag=${latin1([0xef, 0xbb, 0xbf])}x`).tag).to.equal('\ufeffx')
    })

    const refused: [string, string, RegExp][] = [
      ['a lone %', 'tag=100%', /^the value of query parameter "tag" is not valid percent-encoded UTF-8: "100%"$/],
      ['a % without two hex digits', 'tag=%zz', /^the value of query parameter "tag" is not valid percent-encoded UTF-8/],
      ['an escape of invalid UTF-8', 'tag=%C3%28', /^the value of query parameter "tag" is not valid percent-encoded UTF-8/],
      ['an escape of a surrogate', 'tag=%ED%A0%80', /^the value of query parameter "tag" is not valid percent-encoded UTF-8/],
      ['a truncated escape in a name', '%E0%A4%A=1', /^the query parameter name "%E0%A4%A" is not valid percent-encoded UTF-8/],
      ['a raw Latin-1 byte (not UTF-8)', 'tag=caf\u00e9', /^the query string holds raw bytes that are not UTF-8/],
      ['a raw UTF-8 sequence cut short', `tag=${latin1([0xe2, 0x9c])}`, /^the query string holds raw bytes that are not UTF-8/],
      ['raw UTF-8 of a surrogate', `tag=${latin1([0xed, 0xa0, 0x80])}`, /^the query string holds raw bytes that are not UTF-8/],
      ['a raw overlong encoding', `tag=${latin1([0xc0, 0xaf])}`, /^the query string holds raw bytes that are not UTF-8/],
      ['a raw control character', 'tag=a\u0001', /^the query string holds a character that must be percent-encoded \(code 1\)/],
      ['a raw space', 'tag=a b', /^the query string holds a character that must be percent-encoded \(code 32\)/],
      ['a character that was never a byte', 'tag=\u2713', /^the query string holds a character that is not a byte \(code 10003\)/],
    ]
    for (const [name, qs, message] of refused) {
      it(`refuses ${name} with a 400`, () => {
        const e = refusal(() => parseQuery(qs))
        expect(e.code).to.equal('BAD_REQUEST')
        expect(e.message).to.match(message)
      })
    }

    it('cuts what it echoes of a long value', () => {
      const e = refusal(() => parseQuery(`tag=%zz${'a'.repeat(5000)}`))
      expect(e.message.length).to.be.lessThan(300)
    })
  })

  describe('paging and flags over a parsed query', () => {
    it('refuses paging out of range and flags that are not booleans, naming the parameter', () => {
      expect(refusal(() => parsePaging(parseQuery('limit=1001'))).message).to.equal('limit must be between 1 and 1000: 1001')
      expect(refusal(() => parsePaging(parseQuery('skip=99999999999999999999'))).message).to.match(/^skip must be between 0 and \d+: 99999999999999999999$/)
      expect(refusal(() => parsePaging(parseQuery('limit=1e3'))).message).to.equal('limit must be a whole number: "1e3"')
      expect(refusal(() => parsePaging(parseQuery('limit=1&limit=2'))).message).to.equal('limit given more than once')
      expect(refusal(() => boolParam(parseQuery('confirm=maybe'), 'confirm')).message).to.equal('confirm must be true or false: "maybe"')
    })

    it('a parameter read once is refused when repeated, not resolved to one of its values', () => {
      expect(single(parseQuery('batch=a'), 'batch')).to.equal('a')
      expect(single(parseQuery(''), 'batch')).to.equal(undefined)
      expect(refusal(() => single(parseQuery('batch=a&batch=b'), 'batch')).message).to.equal('batch given more than once')
    })

    it('prototype names are filters like any unknown field, never paging or flags', () => {
      const q = parseQuery('__proto__=x&constructor=y')
      expect(parsePaging(q)).to.deep.equal({ limit: 25, skip: 0 })
      expect(parseFilter(q)).to.deep.equal([
        [{ field: '__proto__', op: 'eq', value: 'x', not: false, caseInsensitive: false }],
        [{ field: 'constructor', op: 'eq', value: 'y', not: false, caseInsensitive: false }],
      ])
    })
  })

  describe('parseFilter: a route\'s own parameters are not filters', () => {
    it('leaves out the names a route reads itself, as spelled, and reads the rest as filters', () => {
      expect(parseFilter(parseQuery('batch=x&limit=1'), ['batch'])).to.equal(undefined)
      expect(parseFilter(parseQuery('batch=x&BATCH=y&name=BatchPin'), ['batch'])).to.deep.equal([
        [{ field: 'BATCH', op: 'eq', value: 'y', not: false, caseInsensitive: false }],
        [{ field: 'name', op: 'eq', value: 'BatchPin', not: false, caseInsensitive: false }],
      ])
    })

    it('paging and the flags every list takes are never filters', () => {
      expect(parseFilter(parseQuery('limit=5&skip=1&count=true&fetchverifiers&sort=-created&descending'))).to.equal(undefined)
    })
  })
})
