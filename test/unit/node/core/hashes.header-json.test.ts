import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { dataRefsJson, genericHeaderJson, messageHeaderJson, type MessageHeader } from '../../../../node/core/hashes.js'
import { goJson, goJsonString, goStruct } from '../../../../node/core/go-json.js'
import { formatTimestamp } from '../../../../node/core/time.js'
import { parseHash, parseUuid, type DataId, type Hash, type MessageId } from '../../../../node/core/ids.js'
import { ParleyError } from '../../../../node/core/errors.js'

const hex = (n: number): string => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('')
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!
const STRINGS = ['', 'a', 'orders', 'did:firefly:org/org0', '<b>&"x"\\', 'tab\there', 'line\u2028sep', 'é☃😀', '\ud800lone', 'nul\u0000', 'q\u001f']

/** The header's text, or the error it is refused with. */
function outcome(f: () => string): string {
  try {
    return f()
  } catch (err) {
    return `threw ${(err as Error).message}`
  }
}

function randomHeader(): MessageHeader {
  const h: Record<string, unknown> = {}
  const maybe = (k: string, v: () => unknown): void => {
    const r = Math.random()
    if (r < 0.7) h[k] = v()
    else if (r < 0.8) h[k] = null
    else if (r < 0.85) h[k] = ''
  }
  maybe('id', () => (Math.random() < 0.9 ? randomUUID() : pick([randomUUID().toUpperCase(), 'not-a-uuid'])))
  maybe('cid', () => randomUUID())
  h.type = pick(['broadcast', 'private', 'definition', '', '<x>'])
  maybe('txtype', () => pick(['batch_pin', 'none', '']))
  maybe('author', () => pick(STRINGS))
  maybe('key', () => '0x' + hex(40))
  maybe('created', () =>
    pick([
      formatTimestamp(Date.now() + Math.floor(Math.random() * 1e11) - 5e10, Math.floor(Math.random() * 1e6)),
      '2024-02-29T12:00:00Z',
      '2023-02-29T12:00:00Z',
      '2024-01-31T23:59:59.120Z',
      '0001-01-01T00:00:00Z',
      '2024-01-01T00:00:00+01:00',
      'yesterday',
    ]),
  )
  maybe('namespace', () => pick(['default', 'ns1', '']))
  maybe('group', () => (Math.random() < 0.9 ? hex(64) : '0x' + hex(64).toUpperCase()))
  maybe('topics', () => Array.from({ length: Math.floor(Math.random() * 3) }, () => pick(STRINGS)))
  maybe('tag', () => pick(STRINGS))
  maybe('datahash', () => hex(64))
  return h as unknown as MessageHeader
}

describe('message header JSON: the direct writer equals the goJson definition', () => {
  it('for thousands of random headers, faults included', () => {
    for (let i = 0; i < 2000; i++) {
      const h = randomHeader()
      expect(outcome(() => messageHeaderJson(h)), JSON.stringify(h)).to.equal(outcome(() => genericHeaderJson(h)))
    }
  })

  it('for headers only the goJson definition writes: txparent, non-string fields', () => {
    const base = { id: randomUUID() as MessageId, type: 'broadcast' }
    for (const h of [
      { ...base, txparent: { type: 'batch_pin', id: randomUUID() } },
      { ...base, type: null },
      { ...base, topics: ['a', 1] },
      { ...base, tag: 5 },
      { ...base, id: 0 },
    ] as unknown as MessageHeader[]) {
      expect(outcome(() => messageHeaderJson(h))).to.equal(outcome(() => genericHeaderJson(h)))
    }
  })

  it('for the edge headers: no fields at all, topics that are not a list', () => {
    expect(messageHeaderJson({} as MessageHeader)).to.equal('{}')
    expect(genericHeaderJson({} as MessageHeader)).to.equal('{}')
    const stringTopics = { id: randomUUID(), type: 'broadcast', topics: 'orders' } as unknown as MessageHeader
    expect(messageHeaderJson(stringTopics)).to.equal(genericHeaderJson(stringTopics))
    expect(messageHeaderJson(stringTopics)).to.contain('"topics":"orders"')
  })

  it('refuses a created time that falls before year 0 once its offset is applied, as the long way does', () => {
    const h = { id: randomUUID(), type: 'broadcast', created: '0000-01-01T00:00:00+01:00' } as unknown as MessageHeader
    expect(() => messageHeaderJson(h)).to.throw(ParleyError, /header.created is not an RFC3339 timestamp: "0000-01-01T00:00:00\+01:00"/)
    expect(outcome(() => genericHeaderJson(h))).to.equal(outcome(() => messageHeaderJson(h)))
    // The same instant an hour later is year 0, which Go writes.
    expect(messageHeaderJson({ ...h, created: '0000-01-01T01:00:00+01:00' } as MessageHeader)).to.contain('"created":"0000-01-01T00:00:00Z"')
  })

  it('writes a canonical created as given, as the long way does (checked through an offset form, which goes the long way)', () => {
    for (let i = 0; i < 2000; i++) {
      const t = formatTimestamp(Math.floor(Math.random() * 2.5e14) - 3e13, Math.floor(Math.random() * 1e6))
      const h = { id: randomUUID() as MessageId, type: 'broadcast' }
      const fast = messageHeaderJson({ ...h, created: t } as MessageHeader)
      const slow = messageHeaderJson({ ...h, created: t.replace(/Z$/, '+00:00') } as MessageHeader)
      expect(fast, t).to.equal(slow)
    }
  })
})

describe('data refs JSON and goJsonString', () => {
  it('data refs: the direct writer equals goJson of the structs, and refuses what the parsers refuse', () => {
    for (let n = 0; n < 4; n++) {
      const refs = Array.from({ length: n }, () => ({ id: (Math.random() < 0.5 ? randomUUID() : randomUUID().toUpperCase()) as DataId, hash: ('0x' + hex(64)) as Hash }))
      expect(dataRefsJson(refs)).to.equal(goJson(refs.map((r) => goStruct(['id', parseUuid(r.id)], ['hash', parseHash(r.hash)]))))
    }
    expect(() => dataRefsJson([{ id: 'x' as DataId, hash: hex(64) as Hash }])).to.throw(/data id is not a valid UUID/)
  })

  it('goJsonString: strings needing no escape come back quoted, others escaped as before', () => {
    expect(goJsonString('did:firefly:org/org0')).to.equal('"did:firefly:org/org0"')
    expect(goJsonString('')).to.equal('""')
    expect(goJsonString('a<b')).to.equal('"a\\u003cb"')
    expect(goJsonString('😀')).to.equal('"😀"')
    expect(goJsonString('\ud800')).to.equal('"\ufffd"')
    expect(goJsonString('x\u2028')).to.equal('"x\\u2028"')
  })
})
