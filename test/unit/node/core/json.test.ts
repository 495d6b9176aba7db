import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { clientJson, compactJson, goJson, goJsonString, goStruct, parseJsonRaw, RawJson, type JsonNode } from '../../../../node/core/json.js'
import { HTTP_STATUS } from '../../../../node/api/errors.js'

function invalid(text: string, options?: { maxDepth?: number }): ParleyError {
  try {
    parseJsonRaw(text, options)
  } catch (err) {
    expect(err).to.be.instanceOf(ParleyError)
    const e = err as ParleyError
    expect(e.code).to.equal('INVALID_JSON')
    expect(HTTP_STATUS[e.code]).to.equal(400)
    return e
  }
  throw new Error(`accepted invalid JSON: ${JSON.stringify(text)}`)
}

// Deterministic pseudo-random numbers, so a failure reproduces.
function prng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

describe('Go-compatible JSON', () => {
  describe('compaction (json.Marshal of a json.RawMessage)', () => {
    it('drops whitespace outside strings and keeps key order, number text and big integers', () => {
      const text = ' {\n\t"b" : 1.0 ,\r\n "a": 1e3, "10": -0.50E+2, "1" : 123456789012345678901234567890, "s": "x  y\\n" } \n'
      expect(compactJson(text)).to.equal('{"b":1.0,"a":1e3,"10":-0.50E+2,"1":123456789012345678901234567890,"s":"x  y\\n"}')
    })

    it('HTML-escapes < > & and U+2028/U+2029 inside strings, as Go does', () => {
      expect(compactJson('{"h": "<a href=\'x\'>&amp;</a>", "ls": "a\u2028b\u2029c"}')).to.equal(
        '{"h":"\\u003ca href=\'x\'\\u003e\\u0026amp;\\u003c/a\\u003e","ls":"a\\u2028b\\u2029c"}',
      )
      // Runs of them, at a string's start, middle and end, then plain text or another string.
      expect(compactJson('["<<&>\u2028\u2029", "a<<>b", "&&"]')).to.equal('["\\u003c\\u003c\\u0026\\u003e\\u2028\\u2029","a\\u003c\\u003c\\u003eb","\\u0026\\u0026"]')
    })

    it('keeps escapes exactly as received (case of hex digits, \\/, escaped and literal non-ASCII)', () => {
      const text = '["\\u00E9", "\\u00e9", "é", "\\/", "\\u003c", "\\ud83d\\ude00", "😀", "\\b\\f"]'
      expect(compactJson(text)).to.equal(text.replace(/, /g, ','))
    })

    it('returns an already-compact text unchanged', () => {
      const text = '{"a":[1,2,{"b":null,"c":true,"d":false}],"e":"f"}'
      expect(compactJson(text)).to.equal(text)
    })

    it('is idempotent', () => {
      const once = compactJson('{ "a" : "<>" , "b" : [ 1 , 2 ] }')
      expect(compactJson(once)).to.equal(once)
    })

    it('compacts top-level scalars', () => {
      expect(compactJson('  "x" \n')).to.equal('"x"')
      expect(compactJson(' -12.5e-3 ')).to.equal('-12.5e-3')
      expect(compactJson('\tnull\r\n')).to.equal('null')
    })

    it('writes a lone surrogate in JS text as U+FFFD, which is what its UTF-8 bytes would say', () => {
      expect(compactJson('"a\uD800b"')).to.equal('"a\uFFFDb"')
      // Either half alone, at either end, reversed; a pair is kept (and written as it is).
      expect(compactJson('"\uDC00\uD800"')).to.equal('"\uFFFD\uFFFD"')
      expect(compactJson('["\uDBFF", "x\uDFFF"]')).to.equal('["\uFFFD","x\uFFFD"]')
      expect(compactJson('"\uD83D\uDE00 \uD83D"')).to.equal('"\uD83D\uDE00 \uFFFD"')
      expect(compactJson('"\uD83D\uDE00"')).to.equal('"\uD83D\uDE00"')
    })

    it('agrees with JSON.stringify on random documents without HTML characters', () => {
      const rnd = prng(42)
      const gen = (depth: number): unknown => {
        const r = rnd()
        if (depth > 4 || r < 0.3) {
          const k = Math.floor(rnd() * 5)
          if (k === 0) return Math.floor(rnd() * 1e9) - 5e8
          if (k === 1) return rnd() * 1000
          if (k === 2) return 'str' + Math.floor(rnd() * 1000) + ' é\n"\\'
          if (k === 3) return rnd() < 0.5
          return null
        }
        if (r < 0.65) return Array.from({ length: Math.floor(rnd() * 4) }, () => gen(depth + 1))
        return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, (_, i) => [`k${i}${Math.floor(rnd() * 9)}`, gen(depth + 1)]))
      }
      for (let n = 0; n < 200; n++) {
        const doc = gen(0)
        expect(compactJson(JSON.stringify(doc, null, n % 3))).to.equal(JSON.stringify(doc))
      }
    })
  })

  describe('acceptance (Go encoding/json rules)', () => {
    const rejected: [string, string][] = [
      ['a trailing comma in an object', '{"a":1,}'],
      ['a trailing comma in an array', '[1,2,]'],
      ['a comment', '{"a":1 /* no */}'],
      ['a line comment', '// no\n{}'],
      ['NaN', '[NaN]'],
      ['Infinity', '[Infinity]'],
      ['-Infinity', '[-Infinity]'],
      ['single quotes', "{'a':1}"],
      ['an unquoted key', '{a:1}'],
      ['a leading zero', '[01]'],
      ['a bare decimal point', '[1.]'],
      ['a missing integer part', '[.5]'],
      ['a plus sign', '[+1]'],
      ['a lone minus', '[-]'],
      ['an empty exponent', '[1e]'],
      ['a hex number', '[0x10]'],
      ['a raw control character in a string', '["a\tb"]'],
      ['a raw newline in a string', '["a\nb"]'],
      ['an unknown escape', '["\\x41"]'],
      ['a short \\u escape', '["\\u12"]'],
      ['a non-hex \\u escape', '["\\u12G4"]'],
      ['an empty input', ''],
      ['only whitespace', ' \n\t '],
      ['two top-level values', '{} {}'],
      ['an unterminated string', '{"a":"b'],
      ['an unclosed array', '[1,2'],
      ['an unclosed object', '{"a":1'],
      ['a missing colon', '{"a" 1}'],
      ['a missing value', '{"a":}'],
      ['a missing comma', '[1 2]'],
      ['a mismatched bracket', '[1}'],
      ['a byte order mark', '\uFEFF{}'],
      ['a misspelt literal', '[tru]'],
      ['a capitalised literal', '[True]'],
      ['undefined', '[undefined]'],
      ['a non-breaking space as whitespace', '[1,\u00A02]'],
    ]
    for (const [what, text] of rejected) {
      it(`rejects ${what}`, () => {
        invalid(text)
      })
    }

    it('says what is wrong and where, by line and column', () => {
      const e = invalid('{\n  "a": 1,\n}')
      expect(e.message).to.equal("invalid character '}' looking for beginning of object key string at line 3, column 1 (offset 12)")
      expect(invalid('[1, 2').message).to.match(/^unexpected end of JSON input at line 1, column 6/)
      expect(invalid('{"a":"\u0001"}').message).to.match(/invalid character U\+0001 in string literal at line 1, column 7/)
      expect(invalid('[1] x').message).to.match(/invalid character 'x' after top-level value/)
      expect(invalid('[01]').message).to.match(/invalid character '1' after array element/)
    })

    it('accepts surrogate escapes without their pair, as Go does, and decodes them to U+FFFD', () => {
      const n = parseJsonRaw('["\\ud800", "\\udc00x", "\\ud83d\\ude00", "\\ud83dA"]')
      expect(n.raw).to.equal('["\\ud800","\\udc00x","\\ud83d\\ude00","\\ud83dA"]')
      expect(n.value).to.deep.equal(['\uFFFD', '\uFFFDx', '😀', '\uFFFDA'])
    })

    it('accepts nesting up to Go’s limit of 10000 and refuses deeper, without overflowing the stack', () => {
      const deep = (d: number): string => '['.repeat(d) + ']'.repeat(d)
      expect(parseJsonRaw(deep(10000)).raw).to.have.length(20000)
      expect(invalid(deep(10001)).message).to.match(/exceeded max depth of 10000/)
      expect(invalid('{"a":'.repeat(1001) + '1' + '}'.repeat(1001), { maxDepth: 1000 }).message).to.match(/exceeded max depth of 1000 /)
      let n: JsonNode | undefined = parseJsonRaw(deep(10000))
      let depth = 0
      while (n && n.kind === 'array') {
        depth++
        n = n.items[0]
      }
      expect(depth).to.equal(10000)
    })

    it('agrees with JSON.parse on what is valid, across random corruptions of valid text', () => {
      const rnd = prng(7)
      const base = '{"a": [1, -2.5e+3, "x\\"y\\u00e9"], "b": {"c": null, "d": true, "e": false}, "f": 0}'
      const chars = '{}[],:"\\ 0123456789.eE+-tfnul\u0001a\t'
      for (let n = 0; n < 3000; n++) {
        const arr = [...base]
        for (let k = 0; k < 1 + Math.floor(rnd() * 3); k++) {
          const at = Math.floor(rnd() * arr.length)
          const op = rnd()
          const ch = chars[Math.floor(rnd() * chars.length)] ?? ' '
          if (op < 0.4) arr.splice(at, 1)
          else if (op < 0.7) arr.splice(at, 0, ch)
          else arr[at] = ch
        }
        const text = arr.join('')
        let jsOk = true
        try {
          JSON.parse(text)
        } catch {
          jsOk = false
        }
        let ours = true
        try {
          compactJson(text)
        } catch (err) {
          expect(err).to.be.instanceOf(ParleyError)
          ours = false
        }
        expect(ours, text).to.equal(jsOk)
      }
    })
  })

  describe('the node tree', () => {
    it('gives every nested node its own compact raw text', () => {
      const root = parseJsonRaw('{ "data": [ {"value": { "b":1, "a" : [1, 2.50] } } ] }')
      const value = root.get('data')?.items[0]?.get('value')
      expect(value?.raw).to.equal('{"b":1,"a":[1,2.50]}')
      expect(value?.value).to.deep.equal({ b: 1, a: [1, 2.5] })
      expect(value?.get('a')?.items[1]?.raw).to.equal('2.50')
      expect(root.raw).to.equal('{"data":[{"value":{"b":1,"a":[1,2.50]}}]}')
    })

    it('lists members in received order and exposes kinds and values', () => {
      const root = parseJsonRaw('{"z": "s", "10": 1, "y": [true, null], "x": {}}')
      expect(root.kind).to.equal('object')
      expect(root.members.map((m) => m.key)).to.deep.equal(['z', '10', 'y', 'x'])
      expect(root.members.map((m) => m.node.kind)).to.deep.equal(['string', 'number', 'array', 'object'])
      const z = root.get('z')
      expect(z?.kind === 'string' && z.value.toUpperCase()).to.equal('S')
      expect(root.get('missing')).to.equal(undefined)
      expect(root.has('x')).to.equal(true)
      expect(root.get('z')?.get('anything')).to.equal(undefined)
      expect(root.get('z')?.items).to.deep.equal([])
      expect(root.get('x')?.raw).to.equal('{}')
    })

    it('keeps duplicate keys in the raw text while the value and get() take the last, like Go', () => {
      const root = parseJsonRaw('{"a": 1, "b": 2, "a": 3}')
      expect(root.raw).to.equal('{"a":1,"b":2,"a":3}')
      expect(root.members).to.have.length(3)
      expect(root.get('a')?.value).to.equal(3)
      expect(root.value).to.deep.equal({ a: 3, b: 2 })
    })

    it('keeps number text exact where the JS value cannot', () => {
      const root = parseJsonRaw('[12345678901234567890, 1.0, 1e3, -0]')
      expect(root.items.map((n) => n.raw)).to.deep.equal(['12345678901234567890', '1.0', '1e3', '-0'])
      expect(root.items[0]?.value).to.equal(12345678901234567000)
    })

    it('decodes string values while raw keeps the escapes and HTML-escaping', () => {
      const root = parseJsonRaw('{"k\\u0065y": "a<b\\n\\"c\\" \\/ \\u00e9"}')
      const member = root.members[0]
      expect(member?.key).to.equal('key')
      expect(member?.node.value).to.equal('a<b\n"c" / é')
      expect(member?.node.raw).to.equal('"a\\u003cb\\n\\"c\\" \\/ \\u00e9"')
    })

    it('makes "__proto__" an ordinary member, as JSON.parse does', () => {
      const root = parseJsonRaw('{"__proto__": {"polluted": true}}')
      const v = root.value as Record<string, unknown>
      expect(Object.getPrototypeOf(v)).to.equal(Object.prototype)
      expect(Object.keys(v)).to.deep.equal(['__proto__'])
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined)
    })

    it('parses top-level scalars', () => {
      expect(parseJsonRaw(' "x" ').value).to.equal('x')
      expect(parseJsonRaw('42').value).to.equal(42)
      expect(parseJsonRaw('null').kind).to.equal('null')
      expect(parseJsonRaw('false').value).to.equal(false)
    })

    it('parses a 5 MB document, with raw text equal to the compact form', function () {
      // Its speed is measured by the benchmarks; a generous limit here still catches a parser gone quadratic.
      this.timeout(60_000)
      const rnd = prng(1)
      const items = Array.from({ length: 18000 }, (_, i) => ({
        id: `item-${i}`,
        n: Math.floor(rnd() * 1e12),
        f: rnd(),
        tags: ['alpha', 'beta', 'gamma'].slice(0, 1 + (i % 3)),
        nested: { ok: i % 2 === 0, text: 'lorem ipsum dolor sit amet '.repeat(2), none: null },
      }))
      const text = JSON.stringify({ items }, null, 2)
      expect(text.length).to.be.greaterThan(5_000_000)
      const root = parseJsonRaw(text)
      expect(root.raw).to.equal(JSON.stringify({ items }))
      expect(root.get('items')?.items).to.have.length(18000)
      expect(root.get('items')?.items[123]?.raw).to.equal(JSON.stringify(items[123]))
      expect(root.value).to.deep.equal({ items })
    })
  })

  describe('goJsonString (Go json.Marshal of a string)', () => {
    it('escapes quotes, backslashes and control characters like Go ≥ 1.22', () => {
      expect(goJsonString('"\\\n\r\t\b\f\u0000\u0001\u001f')).to.equal('"\\"\\\\\\n\\r\\t\\b\\f\\u0000\\u0001\\u001f"')
    })

    it('HTML-escapes < > & and U+2028/U+2029, and leaves DEL, / and non-ASCII as they are', () => {
      expect(goJsonString('<a>&b\u2028\u2029')).to.equal('"\\u003ca\\u003e\\u0026b\\u2028\\u2029"')
      expect(goJsonString('\u007f/é😀')).to.equal('"\u007f/é😀"')
    })

    it('writes a lone surrogate as U+FFFD', () => {
      expect(goJsonString('a\uD800')).to.equal('"a\uFFFD"')
      expect(goJsonString('\uDC00b')).to.equal('"\uFFFDb"')
    })
  })

  describe('goJson (Go json.Marshal of our fixed shapes)', () => {
    it('writes GoStruct fields in the given order and omits undefined ones', () => {
      expect(goJson(goStruct(['10', 1], ['b', 'x'], ['skip', undefined], ['a', null], ['1', [true, false]]))).to.equal(
        '{"10":1,"b":"x","a":null,"1":[true,false]}',
      )
    })

    it('writes plain objects in key order and omits undefined members', () => {
      expect(goJson({ id: 'x', hash: 'y', none: undefined, nested: { list: [], empty: {} } })).to.equal(
        '{"id":"x","hash":"y","nested":{"list":[],"empty":{}}}',
      )
    })

    it('embeds RawJson compacted and HTML-escaped, as Go does with a RawMessage', () => {
      expect(goJson({ value: new RawJson('{ "a" : "<b>" , "n": 1.50 }') })).to.equal('{"value":{"a":"\\u003cb\\u003e","n":1.50}}')
      expect(goJson([new RawJson('{"already":"compact"}', true)])).to.equal('[{"already":"compact"}]')
      expect(() => new RawJson('{bad}')).to.throw(ParleyError)
    })

    it('formats numbers like Go float64 and int encoders', () => {
      expect(goJson([0, -0, 1, -17, 0.1, 1e21, 1.5e-7, 123456789012, 2n ** 64n])).to.equal(
        '[0,-0,1,-17,0.1,1e+21,1.5e-7,123456789012,18446744073709551616]',
      )
    })

    it('refuses what Go cannot encode or we never hash', () => {
      expect(() => goJson([NaN])).to.throw(ParleyError, /NaN/)
      expect(() => goJson([Infinity])).to.throw(ParleyError)
      expect(() => goJson([undefined])).to.throw(ParleyError, /undefined/)
      expect(() => goJson({ when: new Date(0) })).to.throw(ParleyError, /Date/)
      expect(() => goJson(new Map())).to.throw(ParleyError, /Map/)
      expect(() => goJson(() => 1)).to.throw(ParleyError, /function/)
      expect(() => goJson([Symbol('s')])).to.throw(ParleyError, /cannot encode symbol as JSON/)
      expect(() => goJson({ v: Object.create(Object.create(null) as object) as object })).to.throw(ParleyError, /cannot encode object as JSON/)
      expect(goJson(Object.create(null) as object)).to.equal('{}')
    })

    it('names a cycle rather than overflowing the stack', () => {
      const cycle: unknown[] = []
      cycle.push({ again: cycle })
      expect(() => goJson(cycle)).to.throw(ParleyError, /value nests too deeply to encode as JSON \(a cycle\?\)/).with.property('code', 'INTERNAL')
    })

    it('escapes keys and strings like Go', () => {
      expect(goJson({ '<k>': 'a&b' })).to.equal('{"\\u003ck\\u003e":"a\\u0026b"}')
    })
  })
})

describe('clientJson: JSON for clients that parse it', () => {
  const values: unknown[] = [
    { id: 'x', sequence: 12, type: 'message_confirmed', nested: { list: [1, 'two', null, true], empty: {} }, skipped: undefined },
    { html: '<script>&"\'</script>', separators: 'a\u2028b\u2029c', unicode: 'héllo ☃ 😀', control: 'tab\tline\nnul\u0000' },
    { schema: new RawJson('{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}}}', true), after: '<' },
    [new RawJson('[1,2.50,"<"]', true), new RawJson('null', true)],
    goStruct(['b', 1], ['a', 'z'], ['c', undefined]),
    -0.5,
    1e21,
  ]

  it('writes the value goJson writes, RawJson texts kept exactly', () => {
    for (const v of values) expect(clientJson(v), JSON.stringify(v)).to.equal(goJson(v))
  })

  it('a string shaped like its internal placeholder stays a string', () => {
    const v = { tag: '\u0000raw:0\u0000', schema: new RawJson('{"a":1}', true) }
    expect(JSON.parse(clientJson(v))).to.deep.equal({ tag: '\u0000raw:0\u0000', schema: { a: 1 } })
  })
})
