import { expect } from 'chai'
import { batchManifest, dataRefsJson, messageHeaderJson, sha256Hex, type MessageHeader } from '../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { plainHeaderJson, plainRefsJson, sealManifest } from '../../node/batch/verify.js'
import type { BatchPayload, Header } from '../../node/model/index.js'

/**
 * The direct writers of batch/verify.ts against core/hashes.ts: whenever they answer, they answer the same text,
 * and they step aside (undefined) for anything core/hashes.ts would normalise, omit or refuse.
 */
describe('batch verification texts', () => {
  const base: Header = {
    id: '2cd37805-5f40-4e12-962e-67868cde3049' as MessageId,
    cid: '39296b6e-91b9-4a61-b279-833c85b04d94' as MessageId,
    type: 'private',
    txtype: 'batch_pin',
    author: '0x12345',
    key: '0xabc',
    created: '2021-05-04T04:55:03.123456789Z' as Header['created'],
    namespace: 'ns1',
    group: '3fcc7e07069e441f07c9f6b26f16fcb2dc896222d72888675082fd308440d9ae' as Hash,
    topics: ['topic1', 'topic2'],
    tag: 'tag1',
    datahash: '2468d5c26cc85968acaf8b96d09476453916ea4eab41632a31d09efc7ab297d2' as Hash,
  }

  /** Either answer is the reference text; a refusal by the reference is a step aside here. */
  function agrees(h: MessageHeader): 'direct' | 'aside' {
    const direct = plainHeaderJson(h)
    let reference: string | Error
    try {
      reference = messageHeaderJson(h)
    } catch (err) {
      reference = err as Error
    }
    if (direct === undefined) return 'aside'
    expect(direct).to.equal(reference)
    return 'direct'
  }

  it('writes the upstream vector header byte for byte', () => {
    const vector = { ...base, key: undefined } as unknown as MessageHeader
    expect(agrees(vector)).to.equal('direct')
    expect(sha256Hex(plainHeaderJson(vector)!)).to.equal('b5b9da88ed83403754bf78ed596eab70b803fd02108635fb932c2416d9e379b7')
    expect(agrees(base)).to.equal('direct')
  })

  it('agrees on omitted and empty fields, escapes and every form of text', () => {
    const variants: Partial<Record<keyof MessageHeader, unknown>>[] = [
      { cid: undefined, group: undefined, tag: undefined },
      { cid: '', tag: '', txtype: '', author: null, key: '', namespace: '', created: '' },
      { cid: null, group: null, datahash: null, topics: [] },
      { topics: undefined },
      { type: '' },
      { tag: 'a<b>&c' },
      { author: 'did:firefly:org/"quoted"\\' },
      { namespace: 'naïve' },
      { topics: ['t\u2028', 'plain', "it's ok; ~[]{}"] },
      { tag: '\u0000\b\f\n' },
      { key: '\ud800' },
    ]
    for (const v of variants) agrees({ ...base, ...v } as MessageHeader)
    expect(agrees({ ...base, tag: 'a<b' })).to.equal('direct')
    expect(agrees({ ...base, topics: ["it's ok; ~[]{}"] })).to.equal('direct')
  })

  it('agrees on headers mixed at random from ordinary and awkward field values', () => {
    const pools: Partial<Record<keyof MessageHeader, unknown[]>> = {
      id: [base.id, base.id.toUpperCase(), '', 'x'],
      cid: [undefined, null, '', base.cid, base.cid!.toUpperCase()],
      type: ['broadcast', '', 'a"b', undefined],
      txtype: [undefined, null, '', 'batch_pin', 'none'],
      author: ['did:firefly:org/o', '', null, 'é', '<'],
      created: ['2021-05-04T04:55:03Z', '2021-05-04T04:55:03.5Z', '2021-05-04T04:55:03.50Z', '2020-02-30T00:00:00Z', '1999-12-31T23:59:60Z', '', undefined, '0001-01-01T00:00:00Z'],
      group: [undefined, '', base.group, 'G'.repeat(64)],
      topics: [[], ['a'], ['a', 'b&'], undefined, ['\u007f']],
      tag: [undefined, '', 'x', '>'],
      datahash: [base.datahash, '', null, `0X${base.datahash}`],
    }
    let seed = 7
    const pick = <T>(list: T[]): T => list[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % list.length]!
    let direct = 0
    for (let k = 0; k < 3000; k++) {
      const h: Record<string, unknown> = { ...base }
      for (const [field, list] of Object.entries(pools)) h[field] = pick(list!)
      if (agrees(h as unknown as MessageHeader) === 'direct') direct++
    }
    expect(direct).to.be.above(50)
  })

  it('steps aside for what core/hashes.ts normalises or refuses', () => {
    const aside: Partial<Record<keyof MessageHeader, unknown>>[] = [
      { id: base.id.toUpperCase() },
      { id: '' },
      { id: 'not-a-uuid' },
      { cid: base.cid!.toUpperCase() },
      { group: `0x${base.group}` },
      { datahash: base.datahash.toUpperCase() },
      { created: '2021-05-04T04:55:03.120Z' },
      { created: '2021-05-04T04:55:03.000Z' },
      { created: '2021-05-04T04:55:03.1234567891Z' },
      { created: '2021-05-04T06:55:03+02:00' },
      { created: '0001-01-01T00:00:00Z' },
      { created: '2021-02-29T00:00:00Z' },
      { created: '2021-04-31T00:00:00Z' },
      { created: '2021-13-01T00:00:00Z' },
      { created: '2021-01-01T24:00:00Z' },
      { topics: 'one' },
      { topics: ['a', 1] },
      { type: undefined },
      { txtype: 3 },
      { txparent: { type: 'batch_pin' } },
    ]
    for (const v of aside) expect(agrees({ ...base, ...v } as MessageHeader), JSON.stringify(v)).to.equal('aside')
    // Canonical instants it writes itself: a leap day, year 0, the zero time with a fraction.
    for (const created of ['2024-02-29T23:59:59Z', '2000-02-29T00:00:00.5Z', '0000-03-01T00:00:00Z', '0001-01-01T00:00:00.1Z', '9999-12-31T23:59:59.999999999Z']) {
      expect(agrees({ ...base, created } as unknown as MessageHeader), created).to.equal('direct')
    }
  })

  it('writes data references and manifests as core/hashes.ts does, and steps aside for ids it would normalise', () => {
    const refs = [
      { id: newId<DataId>(), hash: 'a'.repeat(64) as Hash },
      { id: newId<DataId>(), hash: 'b'.repeat(64) as Hash },
    ]
    expect(plainRefsJson(refs)).to.equal(dataRefsJson(refs))
    expect(plainRefsJson([])).to.equal(dataRefsJson([]))
    expect(plainRefsJson([{ ...refs[0]!, hash: `0x${refs[0]!.hash}` as Hash }])).to.equal(undefined)
    expect(plainRefsJson([{ ...refs[0]!, id: refs[0]!.id.toUpperCase() as DataId }])).to.equal(undefined)

    const b: Pick<BatchPayload, 'id' | 'tx' | 'messages' | 'data'> = {
      id: newId<BatchId>(),
      tx: { type: 'batch_pin', id: newId<TxId>() },
      messages: [
        { header: { ...base, id: newId<MessageId>() }, hash: 'c'.repeat(64) as Hash, data: [refs[0]!] },
        { header: { ...base, id: newId<MessageId>(), topics: ['x'] }, hash: 'd'.repeat(64) as Hash, data: [refs[1]!] },
      ],
      data: [],
    }
    const reference = (x: typeof b) =>
      batchManifest({ id: x.id, txId: x.tx.id, txType: x.tx.type, messages: x.messages.map((m) => ({ id: m.header.id, hash: m.hash, topics: m.header.topics.length })), data: x.data.map((d) => ({ id: d.id, hash: d.hash })) })
    expect(sealManifest(b).manifest).to.equal(reference(b))
    // Normalised by the reference, the same text either way.
    const upper = { ...b, id: b.id.toUpperCase() as BatchId, tx: { ...b.tx, type: 'unpinned' as const } }
    expect(sealManifest(upper).manifest).to.equal(reference(upper))
  })
})
