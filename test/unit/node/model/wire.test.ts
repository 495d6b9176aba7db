import { expect } from 'chai'
import { goJson } from '../../../../node/core/json.js'
import { batchHeaderJson, dataJson, dataJsonAround, headerJson, headerJsonText, messageJson, rememberMessageJson } from '../../../../node/model/wire.js'
import type { BatchMessage, Data, Header } from '../../../../node/model/index.js'

const header = (over: Record<string, unknown> = {}): Header =>
  ({
    id: '4a1c8a3e-0b5f-4c1e-9d2a-7f3e5b6c8d9e',
    type: 'broadcast',
    txtype: 'batch_pin',
    author: 'did:firefly:org/org0',
    key: '0xab',
    created: '2026-11-23T00:00:00Z',
    namespace: 'default',
    topics: ['orders', '<b>'],
    datahash: 'cc'.repeat(32),
    ...over,
  }) as unknown as Header
const data = (over: Record<string, unknown> = {}): Data =>
  ({ id: '5b2d9b4f-1c6a-4d2f-8e3b-8a4f6c7d9e0f', validator: 'json', namespace: 'default', hash: 'dd'.repeat(32), created: '2026-11-23T00:00:00Z', value: '{"a":1}', ...over }) as unknown as Data

/** The direct writer's text of a data item, its value put back between the two halves. */
const around = (d: Data): string => {
  const { before, after } = dataJsonAround(d)
  return before + (d.value ?? 'null') + after
}

describe('wire JSON: the direct writers equal goJson of the shapes they stand for', () => {
  it('writes a header with every optional field, or none, as goJson does', () => {
    for (const h of [header(), header({ cid: '6c3e0c5a-2d7b-4e3a-9f4c-9b5a7d8e0f1a', group: 'ab'.repeat(32), tag: 'order', topics: [] })]) {
      expect(headerJsonText(h)).to.equal(goJson(headerJson(h)))
    }
    expect(headerJson(header(), { topicAlias: true })).to.deep.include({ topic: ['orders', '<b>'] })
    expect(headerJson(header())).to.not.have.property('topic')
  })

  it('hands a header with fields of another type to goJson, which writes or refuses them alike', () => {
    for (const odd of [{ topics: 'orders' }, { topics: ['a', 1] }, { id: 7 }, { cid: 5 }, { group: true }, { tag: ['t'] }, { created: null }]) {
      const h = header(odd)
      let direct: string
      try {
        direct = headerJsonText(h)
      } catch (err) {
        direct = `threw ${(err as Error).message}`
      }
      let generic: string
      try {
        generic = goJson(headerJson(h))
      } catch (err) {
        generic = `threw ${(err as Error).message}`
      }
      expect(direct, JSON.stringify(odd)).to.equal(generic)
    }
  })

  it('writes a data item around its value as goJson does, datatype, blob and public reference included', () => {
    for (const d of [
      data(),
      data({ value: null }),
      data({ datatype: { name: 'widget', version: '1.0' }, blob: { hash: 'ee'.repeat(32), size: 3, name: 'a<b>.txt', public: 'QmBlob' } }),
      data({ blob: { hash: 'ee'.repeat(32), size: 3, name: '' } }),
    ]) {
      expect(around(d)).to.equal(goJson(dataJson(d)))
    }
  })

  it('hands a data item with fields of another type to goJson, the value still between the halves', () => {
    for (const odd of [{ created: 5 }, { datatype: { name: 1, version: '1' } }, { blob: { hash: 'ee'.repeat(32), size: '3', name: '' } }, { blob: { hash: 'ee'.repeat(32), size: 3, name: '', public: 9 } }]) {
      const d = data(odd)
      expect(around(d), JSON.stringify(odd)).to.equal(goJson(dataJson(d)))
    }
  })

  it('writes a batch header with its node and group only when it has them', () => {
    const b = { id: 'b', type: 'private', namespace: 'default', author: 'o', key: 'k', created: 'c', hash: 'h' }
    expect(Object.keys(batchHeaderJson(b))).to.deep.equal(['id', 'type', 'namespace', 'author', 'key', 'created', 'hash'])
    expect(Object.keys(batchHeaderJson({ ...b, node: 'n', group: 'g' }))).to.deep.equal(['id', 'type', 'namespace', 'node', 'author', 'key', 'group', 'created', 'hash'])
  })

  it('reuses a message text written when it was accepted only for the same hash and data, once when consumed', () => {
    const refs = [{ id: '5b2d9b4f-1c6a-4d2f-8e3b-8a4f6c7d9e0f', hash: 'dd'.repeat(32) }]
    const m = { header: header(), hash: 'aa'.repeat(32), data: refs, pins: ['p1'] } as unknown as BatchMessage
    const expected = goJson({ header: headerJson(m.header), hash: m.hash, data: refs, pins: ['p1'] })
    expect(rememberMessageJson(m)).to.equal(expected)
    expect(headerJsonText(m.header)).to.equal(goJson(headerJson(m.header)))
    // Another hash or another data list under the same header object: written afresh.
    const rehashed = { ...m, hash: 'bb'.repeat(32) } as BatchMessage
    expect(messageJson(rehashed)).to.equal(goJson({ header: headerJson(m.header), hash: rehashed.hash, data: refs, pins: ['p1'] }))
    expect(messageJson({ ...m, data: [...refs] } as BatchMessage)).to.equal(expected)
    expect(messageJson(m, true)).to.equal(expected)
    expect(messageJson(m)).to.equal(expected)
    // No hash yet, refs of another type, no pins.
    const odd = { header: header(), data: [{ id: 1, hash: 'x' }] } as unknown as BatchMessage
    expect(messageJson(odd)).to.equal(goJson({ header: headerJson(odd.header), data: [{ id: 1, hash: 'x' }] }))
  })
})
