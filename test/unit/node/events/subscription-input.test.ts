import { expect } from 'chai'
import { isParleyError, ParleyError } from '../../../../node/core/errors.js'
import {
  filterFromQuery,
  parseDurationMs,
  parseSubscriptionFilter,
  parseSubscriptionOptions,
  parseSubscriptionRequest,
} from '../../../../node/events/subscription-input.js'
import { deliveryShape } from '../../../../node/events/delivery/shape.js'
import { EVENT_FILTER_FIELDS, type EventFilterField, type SubscriptionFilter } from '../../../../node/model/index.js'

/** The error a call throws (it must throw a ParleyError INVALID_FIELD). */
function invalid(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    if (isParleyError(e, 'INVALID_FIELD')) return e.message
    throw e
  }
  return expect.fail('expected INVALID_FIELD')
}

/** The nested filter holding `value` for `field` alone. */
function nested(field: EventFilterField, value: string): SubscriptionFilter {
  const [top, sub] = field.path
  return (sub === undefined ? { [top]: value } : { [top]: { [sub]: value } }) as SubscriptionFilter
}

/** A body object putting `value` at a dotted spelling (`message.tag` → `{message: {tag}}`). */
function bodyAt(spelling: string, value: unknown): Record<string, unknown> {
  const [top, sub] = spelling.split('.') as [string, string | undefined]
  return sub === undefined ? { [top]: value } : { [top]: { [sub]: value } }
}

const spellings = EVENT_FILTER_FIELDS.flatMap((f) => [{ field: f, name: f.name, deprecated: false }, ...f.aliases.map((a) => ({ field: f, name: a.name, deprecated: a.deprecated }))])

describe('subscriptions: input', () => {
  describe('parseSubscriptionFilter (request bodies)', () => {
    it('covers every spelling the table has: the spec names, FireFly\'s deprecated flat keys and blockchain.*', () => {
      expect(spellings.map((s) => s.name)).to.include.members([
        'events',
        'topic',
        'message.author',
        'message.group',
        'message.tag',
        'message.topics',
        'transaction.type',
        'blockchainevent.name',
        'blockchainevent.listener',
        'author',
        'group',
        'tag',
        'topics',
        'blockchain.name',
        'blockchain.listener',
      ])
    })

    for (const s of spellings) {
      it(`reads ${s.name}${s.deprecated ? ' (deprecated)' : ''} into the nested form at ${s.field.path.join('.')}`, () => {
        expect(parseSubscriptionFilter(bodyAt(s.name, '^a.*b$'))).to.deep.equal(nested(s.field, '^a.*b$'))
      })
    }

    it('reads the spec example whole, in the nested form', () => {
      const f = {
        events: 'message_confirmed|message_rejected',
        topic: 't1',
        message: { author: 'did:firefly:org/org0', group: '^[0-9a-f]{64}$', tag: 'tag', topics: 'a|b' },
        transaction: { type: 'batch_pin' },
        blockchainevent: { name: 'BatchPin', listener: '' },
      }
      const { listener: _empty, ...be } = f.blockchainevent
      expect(parseSubscriptionFilter(f)).to.deep.equal({ ...f, blockchainevent: be })
    })

    it('a current key overrides its deprecated alias, whichever comes first; an empty one does not', () => {
      for (const field of EVENT_FILTER_FIELDS) {
        for (const alias of field.aliases.filter((a) => a.deprecated)) {
          const current = bodyAt(field.name, 'new')
          const old = bodyAt(alias.name, 'old')
          expect(parseSubscriptionFilter({ ...old, ...current }), `${field.name} over ${alias.name}`).to.deep.equal(nested(field, 'new'))
          expect(parseSubscriptionFilter({ ...current, ...old }), `${field.name} over ${alias.name}`).to.deep.equal(nested(field, 'new'))
          expect(parseSubscriptionFilter({ ...old, ...bodyAt(field.name, '') }), `empty ${field.name}`).to.deep.equal(nested(field, 'old'))
        }
      }
      expect(parseSubscriptionFilter({ tag: 'old', message: { tag: 'new', author: 'x' } })).to.deep.equal({ message: { author: 'x', tag: 'new' } })
    })

    it("the field's own name wins over its current alias", () => {
      expect(parseSubscriptionFilter({ blockchain: { name: 'alias' }, blockchainevent: { name: 'own' } })).to.deep.equal({ blockchainevent: { name: 'own' } })
    })

    it('empty, null or absent: no filter; empty or null keys are dropped', () => {
      expect(parseSubscriptionFilter(undefined)).to.deep.equal({})
      expect(parseSubscriptionFilter(null)).to.deep.equal({})
      expect(parseSubscriptionFilter({})).to.deep.equal({})
      expect(parseSubscriptionFilter({ events: '', message: {}, transaction: null, tag: null })).to.deep.equal({})
    })

    it('an unknown key is refused, naming it and listing the known ones', () => {
      for (const body of [{ eventz: 'x' }, { message: { topic: 'x' } }, { blockchainevent: { address: 'x' } }, { 'message.tag': 'x' }, { __proto__x: 1 }]) {
        const msg = invalid(() => parseSubscriptionFilter(body))
        expect(msg).to.match(/^unknown subscription filter key filter\./)
        expect(msg).to.include('events, topic, message.author').and.include('deprecated: author, group, tag, topics')
      }
      expect(invalid(() => parseSubscriptionFilter({ message: { topic: 'x' } }))).to.include('filter.message.topic;')
      // A key named __proto__ is a key like any other, and not one of the filter's.
      expect(invalid(() => parseSubscriptionFilter(JSON.parse('{"__proto__": {"events": "x"}}')))).to.include('filter.__proto__;')
    })

    it('a value that is not a string, or a group that is not an object, is refused naming the key', () => {
      expect(invalid(() => parseSubscriptionFilter({ events: 1 }))).to.equal('filter.events must be a string (a regular expression), not 1')
      expect(invalid(() => parseSubscriptionFilter({ message: { tag: ['a'] } }))).to.equal('filter.message.tag must be a string (a regular expression), not ["a"]')
      expect(invalid(() => parseSubscriptionFilter({ tag: true }))).to.include('filter.tag must be a string')
      expect(invalid(() => parseSubscriptionFilter({ message: 'x' }))).to.equal('filter.message must be an object with author, group, tag, topics')
      expect(invalid(() => parseSubscriptionFilter('events'))).to.match(/^filter must be an object/)
      expect(invalid(() => parseSubscriptionFilter(['events']))).to.match(/^filter must be an object/)
    })

    it('a bad expression is refused naming the key as given and the cause (FireFly FF10171)', () => {
      expect(invalid(() => parseSubscriptionFilter({ message: { tag: '(a' } }))).to.equal("unable to compile filter.message.tag regexp \"(a\": error parsing regexp: missing closing ): `(a`")
      expect(invalid(() => parseSubscriptionFilter({ tag: '[z-a]' }))).to.match(/^unable to compile filter\.tag regexp "\[z-a\]": error parsing regexp: invalid character class range/)
      // RE2 has no lookaround or backreferences, as Go's regexp.
      expect(invalid(() => parseSubscriptionFilter({ events: '(?=x)' }))).to.include('filter.events')
      expect(invalid(() => parseSubscriptionFilter({ events: '(a)\\1' }))).to.include('filter.events')
      // As in FireFly, an expression that a current key overrides must still compile.
      expect(invalid(() => parseSubscriptionFilter({ tag: '(', message: { tag: 'ok' } }))).to.match(/^unable to compile filter\.tag regexp/)
      const long = `(${'a'.repeat(500)}`
      expect(invalid(() => parseSubscriptionFilter({ events: long }))).to.have.length.below(400)
    })

    it('refuses, before compiling it, an expression whose program would be too large, however short its text', () => {
      // 88 KB of these took 14 s to compile, on the thread serving the API, before the name was even checked.
      expect(invalid(() => parseSubscriptionFilter({ message: { tag: '[a-z]{1000}'.repeat(3) } }))).to.match(
        /^filter\.message\.tag regexp "\[a-z\]\{1000\}.*" compiles to 3002 RE2 instructions; a filter expression may take at most 2000/,
      )
      // Every spelling given is counted, as every spelling given is compiled (FireFly compiles each before choosing).
      expect(invalid(() => parseSubscriptionFilter({ tag: 'x{2000}', message: { tag: 'ok' } }))).to.match(/^filter\.tag regexp .* compiles to 2002 RE2/)
      expect(invalid(() => filterFromQuery([['filter.topic', '(?:ab){1000}']]))).to.match(/^filter\.topic regexp .* compiles to 2002 RE2/)
      // Nor any text past 4,096 characters: re2js's parser is quadratic in some (a class of many `[:`).
      expect(invalid(() => parseSubscriptionFilter({ topic: `[${'[:'.repeat(2100)}a]` }))).to.match(/^filter\.topic regexp .* is 4203 characters; a filter expression may have at most 4096/)
      // A realistic list of 100 topics fits.
      const topics = `^(${Array.from({ length: 100 }, (_, i) => `topic-${String(i).padStart(3, '0')}`).join('|')})$`
      expect(parseSubscriptionFilter({ topic: topics })).to.deep.equal({ topic: topics })
    })
  })

  describe('filterFromQuery (WebSocket URLs)', () => {
    for (const s of spellings) {
      it(`reads filter.${s.name}${s.deprecated ? ' (deprecated)' : ''}`, () => {
        expect(filterFromQuery([[`filter.${s.name}`, 'x|y']])).to.deep.equal(nested(s.field, 'x|y'))
      })
    }

    it('skips parameters that are not filters, and follows the same precedence', () => {
      const q = new URLSearchParams('namespace=default&ephemeral&autoack&changeevents=.*&filter.events=message_confirmed&filter.tag=old&filter.message.tag=new')
      expect(filterFromQuery(q)).to.deep.equal({ events: 'message_confirmed', message: { tag: 'new' } })
      expect(filterFromQuery(new URLSearchParams('filter.tag=old&filter.message.tag='))).to.deep.equal({ message: { tag: 'old' } })
      expect(filterFromQuery([])).to.deep.equal({})
    })

    it('refuses an unknown filter key, a key given twice, and a bad expression', () => {
      expect(invalid(() => filterFromQuery([['filter.nope', 'x']]))).to.match(/^unknown subscription filter key filter\.nope;/)
      expect(invalid(() => filterFromQuery([['filter.message', 'x']]))).to.match(/^unknown subscription filter key filter\.message;/)
      expect(invalid(() => filterFromQuery(new URLSearchParams('filter.events=a&filter.events=b')))).to.equal('filter.events given more than once')
      expect(invalid(() => filterFromQuery([['filter.blockchain.name', '*']]))).to.match(/^unable to compile filter\.blockchain\.name regexp "\*": error parsing regexp: missing argument to repetition operator/)
    })
  })

  describe('parseSubscriptionOptions', () => {
    it('firstEvent: oldest, newest, or a sequence >= -1 as a number or decimal text', () => {
      expect(parseSubscriptionOptions({ firstEvent: 'oldest' })).to.deep.equal({ firstEvent: 'oldest' })
      expect(parseSubscriptionOptions({ firstEvent: 'newest' })).to.deep.equal({ firstEvent: 'newest' })
      expect(parseSubscriptionOptions({ firstEvent: 42 })).to.deep.equal({ firstEvent: '42' })
      expect(parseSubscriptionOptions({ firstEvent: '42' })).to.deep.equal({ firstEvent: '42' })
      expect(parseSubscriptionOptions({ firstEvent: '+007' })).to.deep.equal({ firstEvent: '7' })
      expect(parseSubscriptionOptions({ firstEvent: -1 })).to.deep.equal({ firstEvent: '-1' })
      expect(parseSubscriptionOptions({ firstEvent: '' })).to.deep.equal({})
      expect(parseSubscriptionOptions({ firstEvent: null })).to.deep.equal({})
      for (const bad of ['Newest', 'first', '1.5', 1.5, '0x10', ' 1', true, {}, 2 ** 60, '99999999999999999999']) {
        expect(invalid(() => parseSubscriptionOptions({ firstEvent: bad }))).to.match(/^options\.firstEvent must be 'newest', 'oldest' or a sequence number, not .* \(FireFly FF10191\)$/)
      }
      expect(invalid(() => parseSubscriptionOptions({ firstEvent: -2 }))).to.equal('options.firstEvent must be greater than or equal to -1, not -2 (FireFly FF10192)')
      expect(invalid(() => parseSubscriptionOptions({ firstEvent: '-5' }))).to.include('greater than or equal to -1')
    })

    it('readAhead: a whole number from 0 to 65535', () => {
      expect(parseSubscriptionOptions({ readAhead: 0 })).to.deep.equal({ readAhead: 0 })
      expect(parseSubscriptionOptions({ readAhead: 50 })).to.deep.equal({ readAhead: 50 })
      expect(parseSubscriptionOptions({ readAhead: 65535 })).to.deep.equal({ readAhead: 65535 })
      for (const bad of [-1, 65536, 1.5, '50', true]) {
        expect(invalid(() => parseSubscriptionOptions({ readAhead: bad }))).to.match(/^options\.readAhead must be a whole number from 0 to 65535, not /)
      }
    })

    it('batch: a boolean; on, it gets FireFly\'s defaults of readAhead 50 and batchTimeout 50ms', () => {
      expect(parseSubscriptionOptions({ batch: false })).to.deep.equal({ batch: false })
      expect(parseSubscriptionOptions({ batch: true })).to.deep.equal({ batch: true, readAhead: 50, batchTimeout: '50ms' })
      expect(parseSubscriptionOptions({ batch: true, readAhead: 0, batchTimeout: '' })).to.deep.equal({ batch: true, readAhead: 50, batchTimeout: '50ms' })
      expect(parseSubscriptionOptions({ batch: true, readAhead: 7, batchTimeout: '1s' })).to.deep.equal({ batch: true, readAhead: 7, batchTimeout: '1s' })
      expect(invalid(() => parseSubscriptionOptions({ batch: 'true' }))).to.equal('options.batch must be true or false, not "true"')
    })

    it('batchTimeout: a Go duration kept as given, or a number of milliseconds', () => {
      for (const d of ['50ms', '1s', '1.5s', '2m', '1h30m', '0', '250', '.5s', '1.s', '100us', '100µs', '+1s']) {
        expect(parseSubscriptionOptions({ batchTimeout: d }), d).to.deep.equal({ batchTimeout: d })
      }
      expect(parseSubscriptionOptions({ batchTimeout: 75 })).to.deep.equal({ batchTimeout: '75ms' })
      expect(parseSubscriptionOptions({ batchTimeout: 2.5 })).to.deep.equal({ batchTimeout: '2.5ms' })
      for (const bad of ['-1s', '1x', 's', '.s', '1 s', '1s ', 'ms', '1sm']) {
        expect(invalid(() => parseSubscriptionOptions({ batchTimeout: bad })), bad).to.match(/^options\.batchTimeout must be a duration like '50ms'/)
      }
      expect(invalid(() => parseSubscriptionOptions({ batchTimeout: -5 }))).to.match(/^options\.batchTimeout must be from 0 to 2147483647 ms/)
      expect(invalid(() => parseSubscriptionOptions({ batchTimeout: '600h' }))).to.match(/^options\.batchTimeout must be from 0 to 2147483647 ms/)
      expect(invalid(() => parseSubscriptionOptions({ batchTimeout: true }))).to.match(/^options\.batchTimeout must be a duration/)
    })

    it('batchTimeout: a number of milliseconds is kept as a fixed-point duration, to the nanosecond, that delivery reads back', () => {
      const cases: [number, string][] = [
        [1e-7, '0ms'],
        [1e-6, '0.000001ms'],
        [0.1 + 0.2, '0.3ms'],
        [123.456789, '123.456789ms'],
        [2_147_483_647, '2147483647ms'],
      ]
      for (const [n, text] of cases) {
        const options = parseSubscriptionOptions({ batch: true, batchTimeout: n })
        expect(options.batchTimeout, String(n)).to.equal(text)
        // What was accepted is what a subscription starts with: the reader delivery uses takes it.
        expect(deliveryShape(options).batch!.timeoutMs, String(n)).to.equal(parseDurationMs(text))
      }
      for (const bad of [NaN, Infinity, -Infinity, -1e-7, 2_147_483_648]) {
        expect(invalid(() => parseSubscriptionOptions({ batchTimeout: bad })), String(bad)).to.equal(`options.batchTimeout must be from 0 to 2147483647 ms, not ${bad}`)
      }
      expect(invalid(() => parseSubscriptionOptions({ batchTimeout: `${'9'.repeat(400)}ms` }))).to.match(/^options\.batchTimeout must be from 0 to 2147483647 ms, not "9{99}…$/)
    })

    it('withData: true is refused (FireFly FF10244); false is accepted', () => {
      expect(invalid(() => parseSubscriptionOptions({ withData: true }))).to.match(/^withData is not supported by the websockets transport/).and.include('FF10244')
      expect(parseSubscriptionOptions({ withData: false })).to.deep.equal({})
      expect(invalid(() => parseSubscriptionOptions({ withData: 'yes' }))).to.include('options.withData must be true or false')
    })

    it('ignores keys meant for other transports, as FireFly does; refuses options that are not an object', () => {
      expect(parseSubscriptionOptions({ url: 'http://x', reply: true, readAhead: 1 })).to.deep.equal({ readAhead: 1 })
      expect(parseSubscriptionOptions(null)).to.deep.equal({})
      expect(invalid(() => parseSubscriptionOptions([1]))).to.match(/^options must be an object/)
      expect(invalid(() => parseSubscriptionOptions('newest'))).to.match(/^options must be an object/)
    })
  })

  describe('parseDurationMs', () => {
    it("reads Go's duration form and bare milliseconds", () => {
      const cases: [string, number][] = [
        ['50ms', 50],
        ['1s', 1000],
        ['1.5s', 1500],
        ['2m', 120_000],
        ['1h30m', 5_400_000],
        ['1m0.5s', 60_500],
        ['0', 0],
        ['0s', 0],
        ['250', 250],
        ['1500us', 1.5],
        ['2000000ns', 2],
        ['3μs', 0.003],
      ]
      for (const [text, ms] of cases) expect(parseDurationMs(text), text).to.be.closeTo(ms, 1e-9)
    })

    it('refuses anything else, naming what it was reading', () => {
      for (const bad of ['', '-1s', '1d', 'abc', '1.5', '1,5s', '1e3ms', 's', '.ms']) {
        expect(() => parseDurationMs(bad, 'x.timeout'), bad).to.throw(ParleyError, /^x\.timeout must be a duration/)
      }
    })
  })

  describe('parseSubscriptionRequest', () => {
    it('reads name, transport (websockets by default), filter and options', () => {
      expect(parseSubscriptionRequest({ name: 'app1' })).to.deep.equal({ name: 'app1', transport: 'websockets', filter: {}, options: {} })
      expect(parseSubscriptionRequest({ name: 'app1', transport: 'websockets', filter: { tag: 'x' }, options: { firstEvent: 'oldest' } })).to.deep.equal({
        name: 'app1',
        transport: 'websockets',
        filter: { message: { tag: 'x' } },
        options: { firstEvent: 'oldest' },
      })
    })

    it('ignores the fields the node sets, so a subscription read back can be sent again', () => {
      const read = { id: '6a9d1e4c-54a1-4bc8-9a34-1b2c3d4e5f60', namespace: 'other', name: 'app1', transport: 'websockets', filter: {}, options: { withData: false }, created: 'x', updated: null, ephemeral: false, status: {} }
      expect(parseSubscriptionRequest(read)).to.deep.equal({ name: 'app1', transport: 'websockets', filter: {}, options: {} })
    })

    it('refuses a missing or bad name, another transport, unknown fields and a body that is not an object', () => {
      expect(invalid(() => parseSubscriptionRequest({}))).to.equal('name is required')
      expect(invalid(() => parseSubscriptionRequest({ name: '' }))).to.equal('name is required')
      expect(invalid(() => parseSubscriptionRequest({ name: 5 }))).to.equal('name must be a string, not 5')
      expect(invalid(() => parseSubscriptionRequest({ name: '-bad' }))).to.match(/^name must be 1-64 letters/)
      expect(invalid(() => parseSubscriptionRequest({ name: 'a'.repeat(65) }))).to.match(/^name must be 1-64 letters/)
      expect(invalid(() => parseSubscriptionRequest({ name: '6A9D1E4C-54A1-4BC8-9A34-1B2C3D4E5F60' }))).to.match(/^name must not be a UUID/)
      expect(invalid(() => parseSubscriptionRequest({ name: '6a9d1e4c54a14bc89a341b2c3d4e5f60' }))).to.match(/^name must not be a UUID/)
      expect(invalid(() => parseSubscriptionRequest({ name: 'a', transport: 'webhooks' }))).to.equal('transport must be one of websockets (the only transport this node serves), not "webhooks"')
      expect(invalid(() => parseSubscriptionRequest({ name: 'a', filters: {} }))).to.equal('unknown subscription field "filters"; a subscription has name, transport, filter, options')
      expect(invalid(() => parseSubscriptionRequest([]))).to.match(/^the request body must be a JSON object/)
      expect(invalid(() => parseSubscriptionRequest('a'))).to.match(/^the request body must be a JSON object/)
      expect(invalid(() => parseSubscriptionRequest({ name: 'a', options: { withData: true } }))).to.include('FF10244')
    })
  })
})

describe('subscription input: how a refused value is quoted', () => {
  it('names a long value cut at 100 characters, and one JSON cannot write as itself', () => {
    expect(invalid(() => parseSubscriptionOptions({ readAhead: 'x'.repeat(300) }))).to.equal(`options.readAhead must be a whole number from 0 to 65535, not "${'x'.repeat(99)}…`)
    expect(invalid(() => parseSubscriptionOptions({ batch: Symbol('s') }))).to.equal('options.batch must be true or false, not Symbol(s)')
  })
})
