import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { serializeBatch, serializeBatchGeneric } from '../../../../node/batch/payload.js'
import { goJson } from '../../../../node/core/json.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import type { BatchId, DataId, Hash, MessageId, TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { dataJson, dataJsonAround, headerJson, headerJsonText, messageJson, rememberMessageJson } from '../../../../node/model/wire.js'
import type { BatchPayload, Data, Header, Message } from '../../../../node/model/index.js'

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!
const hex = (n: number): string => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('')
const TEXT = ['orders', '<tag>&', 'é☃😀', 'a"b\\c', 'x\u2028y', '']
const VALUES = ['{"b":1,"a":[1,2.50,1e3]}', '"x\\u003cy"', '12345678901234567890', '{"html":"\\u003c/script\\u003e"}', '[]']

function data(): Data {
  const value = Math.random() < 0.15 ? null : pick(VALUES)
  const blob = value === null || Math.random() < 0.2 ? { hash: hex(64) as Hash, size: Math.floor(Math.random() * 1e6), name: pick(TEXT), ...(Math.random() < 0.5 ? { public: 'Qm' + hex(20) } : {}) } : undefined
  return {
    id: randomUUID() as DataId,
    validator: pick(['json', 'none']),
    namespace: pick(['default', 'ns<1>']),
    hash: value !== null ? dataHash({ valueRaw: value }) : (hex(64) as Hash),
    created: now(),
    ...(Math.random() < 0.3 ? { datatype: { name: pick(TEXT), version: pick(['1', '']) } } : {}),
    value,
    ...(blob ? { blob } : {}),
  }
}

function message(items: readonly Data[], pinned: boolean): Message {
  const refs = items.map((d) => ({ id: d.id, hash: d.hash }))
  const header: Header = {
    id: randomUUID() as MessageId,
    ...(Math.random() < 0.3 ? { cid: randomUUID() as MessageId } : {}),
    type: pick(['broadcast', 'private', 'definition'] as const),
    txtype: pick(['batch_pin', 'none'] as const),
    author: pick(['did:firefly:org/org0', 'did:<x>']),
    key: '0x' + hex(40),
    created: now(),
    namespace: 'default',
    ...(Math.random() < 0.3 ? { group: hex(64) as Hash } : {}),
    topics: Array.from({ length: 1 + Math.floor(Math.random() * 3) }, () => pick(TEXT)),
    ...(Math.random() < 0.5 ? { tag: pick(TEXT) } : {}),
    datahash: dataRefsHash(refs),
  }
  return { header, hash: messageHash(header), state: 'ready', data: refs, ...(pinned ? { pins: [hex(64) + ':0000000000000001'] } : {}) }
}

function batch(remember: boolean): BatchPayload {
  const items = Array.from({ length: Math.floor(Math.random() * 4) }, data)
  const messages = Array.from({ length: 1 + Math.floor(Math.random() * 4) }, () => message(items.filter(() => Math.random() < 0.6), Math.random() < 0.3))
  // What a sender does at accept: measure (and so write) the message without its pins.
  if (remember) for (const m of messages) rememberMessageJson({ header: m.header, hash: m.hash, data: m.data })
  return {
    id: randomUUID() as BatchId,
    type: pick(['broadcast', 'private'] as const),
    namespace: 'default',
    ...(Math.random() < 0.5 ? { node: 'did:firefly:node/node0' } : {}),
    author: 'did:firefly:org/org0',
    key: '0x' + hex(40),
    ...(Math.random() < 0.3 ? { group: hex(64) as Hash } : {}),
    created: now(),
    hash: hex(64) as Hash,
    tx: { type: 'batch_pin', id: randomUUID() as TxId },
    messages: messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data, ...(m.pins ? { pins: m.pins } : {}) })),
    data: items,
  }
}

describe('batch payload text: messages written once, at accept', () => {
  it('serializeBatch equals the goJson definition byte for byte, with messages written before (pins added after) or not', () => {
    for (let i = 0; i < 500; i++) {
      const b = batch(Math.random() < 0.7)
      const generic = serializeBatchGeneric(b)
      expect(serializeBatch(b)).to.equal(generic)
      // Again, now that the remembered texts were used and dropped.
      expect(serializeBatch(b)).to.equal(generic)
    }
  })

  it('uses a remembered text only for the same hash and data list', () => {
    const items = [data()]
    const m = message(items, false)
    rememberMessageJson(m)
    const other = { ...m, hash: hex(64) as Hash }
    expect(messageJson(other)).to.equal(goJson({ header: headerJson(m.header), hash: other.hash, data: m.data.map((r) => ({ id: r.id, hash: r.hash })) }))
    const fewer = { ...m, data: [] }
    expect(messageJson(fewer)).to.equal(goJson({ header: headerJson(m.header), hash: m.hash, data: [] }))
    // The header's text, remembered with it, is the same whatever the message around it.
    expect(headerJsonText(m.header)).to.equal(goJson(headerJson(m.header)))
  })

  it('header and data item writers equal goJson of headerJson and dataJson', () => {
    for (let i = 0; i < 500; i++) {
      const d = data()
      const m = message([d], false)
      expect(headerJsonText(m.header)).to.equal(goJson(headerJson(m.header)))
      const { before, after } = dataJsonAround(d)
      expect(before + (d.value ?? 'null') + after).to.equal(goJson(dataJson(d)))
    }
  })
})
