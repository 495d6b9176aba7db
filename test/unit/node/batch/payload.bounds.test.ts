import { expect } from 'chai'
import { messageLimitProblem, parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { jsonNodesBuilt } from '../../../../node/core/json.js'
import { now } from '../../../../node/core/time.js'
import { MAX_MESSAGES_PER_BATCH, MAX_TOPICS_PER_BATCH, type BatchPayload, type Header } from '../../../../node/model/index.js'

/** A one-message batch as a member writes it, and the texts of its parts, to repeat or replace in a larger body. */
function oneMessage(): { text: string; message: string; ref: string; dataItem: string } {
  const value = '{"a":1}'
  const d = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value }
  const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0xaa', created: now(), namespace: 'default', topics: ['t1'], datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
  const message = { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }], pins: ['p1'] }
  const b = { id: newId<BatchId>(), type: 'private' as const, namespace: 'default', author: header.author, key: header.key, created: now(), hash: '' as never, tx: { type: 'batch_pin' as const, id: newId<TxId>() }, messages: [message], data: [d] }
  const text = serializeBatch({ ...b, hash: sealManifest(b).hash })
  const messages = text.slice(text.indexOf('"messages":[') + 12, text.indexOf('],"data":['))
  const dataItem = text.slice(text.lastIndexOf('"data":[{"id"') + 8, -3)
  return { text, message: messages, ref: `{"id":"${d.id}","hash":"${d.hash}"}`, dataItem }
}

/** What parseBatch answers for `text`: the batch, or its refusal as `CODE: message`; and the tree nodes it built. */
function parse(text: string): { batch?: BatchPayload; refusal?: string; nodes: number } {
  const before = jsonNodesBuilt()
  try {
    const batch = parseBatch(text)
    return { batch, nodes: jsonNodesBuilt() - before }
  } catch (err) {
    if (!isParleyError(err)) throw err
    return { refusal: `${err.code}: ${err.message}`, nodes: jsonNodesBuilt() - before }
  }
}

/** A list of `n` copies of `item`, comma-separated: the body of a JSON array. */
const times = (item: string, n: number): string => new Array<string>(n).fill(item).join(',')

describe('batch parsing: what a batch holds is bounded by the network limits, not by its length', () => {
  const base = oneMessage()
  const ok = parse(base.text)
  const withMessages = (list: string): string => base.text.replace(`"messages":[${base.message}]`, `"messages":[${list}]`)

  it('reads a batch of one message with a few dozen nodes', () => {
    expect(ok.refusal).to.equal(undefined)
    expect(ok.batch!.messages).to.have.length(1)
    expect(ok.nodes).to.be.lessThan(60)
  })

  it('refuses a flood of millions of tiny items at the first one, having built a handful of nodes', () => {
    const messages = parse(withMessages(times('0', 4_000_000)))
    expect(messages.refusal).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0] must be an object')
    expect(messages.nodes).to.be.lessThan(30)
    const refs = parse(base.text.replace(`"data":[${base.ref}]`, `"data":[${times('0', 4_000_000)}]`))
    expect(refs.refusal).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].data[0] must be an object')
    expect(refs.nodes).to.be.lessThan(ok.nodes)
    const data = parse(base.text.replace(`"data":[${base.dataItem}]`, `"data":[${base.dataItem},${times('{}', 3_000_000)}]`))
    expect(data.refusal).to.equal('BAD_PEER_DATA: malformed batch: payload.data holds more than the 1 data items its messages refer to')
    // What the one-message batch builds, and nothing for the three million items past the bound.
    expect(data.nodes).to.equal(ok.nodes)
  })

  it(`takes ${MAX_MESSAGES_PER_BATCH} messages and refuses one more before building it`, () => {
    const full = parse(withMessages(times(base.message, MAX_MESSAGES_PER_BATCH)))
    expect(full.refusal).to.equal(undefined)
    expect(full.batch!.messages).to.have.length(MAX_MESSAGES_PER_BATCH)
    const over = parse(withMessages(times(base.message, MAX_MESSAGES_PER_BATCH + 1)))
    expect(over.refusal).to.equal(`BAD_PEER_DATA: malformed batch: payload.messages holds more than ${MAX_MESSAGES_PER_BATCH} messages, the most a batch may carry`)
    // Every message up to the bound was read; none past it. (The full batch built its data item besides.)
    expect(over.nodes).to.be.lessThan(full.nodes)
  })

  it(`takes ${MAX_TOPICS_PER_BATCH} topics in all (a message past its own limit is rejected later, as a message) and refuses one more`, () => {
    const topics = (n: number): string => base.text.replace('"topics":["t1"]', `"topics":[${times('"t"', n)}]`)
    const full = parse(topics(MAX_TOPICS_PER_BATCH))
    expect(full.refusal).to.equal(undefined)
    expect(messageLimitProblem(full.batch!.messages[0]!)).to.equal(`the message names ${MAX_TOPICS_PER_BATCH} topics; a message may name at most 10`)
    const over = parse(topics(MAX_TOPICS_PER_BATCH + 1))
    expect(over.refusal).to.equal(`BAD_PEER_DATA: malformed batch: payload.messages[0].header.topics takes the batch past ${MAX_TOPICS_PER_BATCH} topics, the most the messages of a batch may name`)
    // Several megabytes of topics: refused at the cost of the bound.
    const flood = parse(topics(4_000_000))
    expect(flood.refusal).to.equal(over.refusal)
    expect(flood.nodes).to.be.at.most(over.nodes)
  })

  it('takes pins up to the batch\'s bound, leaving a list that does not fit its message to the ordering checks', () => {
    const pins = (list: string): string => base.text.replace('"pins":["p1"]', `"pins":[${list}]`)
    expect(parse(pins('"p1"')).batch!.messages[0]!.pins).to.deep.equal(['p1'])
    // More pins than topics was read (and judged by the ordering checks) before any bound: it still is.
    expect(parse(pins('"p1","p2"')).batch!.messages[0]!.pins).to.deep.equal(['p1', 'p2'])
    const full = parse(pins(times('"p"', MAX_TOPICS_PER_BATCH)))
    expect(full.refusal).to.equal(undefined)
    const over = parse(pins(times('"p"', MAX_TOPICS_PER_BATCH + 1)))
    expect(over.refusal).to.equal(`BAD_PEER_DATA: malformed batch: payload.messages[0].pins takes the batch past ${MAX_TOPICS_PER_BATCH} pins, the most the messages of a batch may carry`)
    const flood = parse(pins(times('0', 2_000_000)))
    expect(flood.refusal).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].pins[0] must be a string')
    expect(flood.nodes).to.be.lessThan(ok.nodes)
  })

  it('takes as many data items as its messages refer to and refuses more', () => {
    const data = (n: number): string => base.text.replace(`"data":[${base.dataItem}]`, `"data":[${times(base.dataItem, n)}]`)
    expect(parse(data(1)).batch!.data).to.have.length(1)
    expect(parse(data(2)).refusal).to.equal('BAD_PEER_DATA: malformed batch: payload.data holds more than the 1 data items its messages refer to')
  })

  it('builds nothing for members it does not read, or for what a data value holds', () => {
    // A header padded with 300,000 members nobody reads, and a data value of 2,000,000 tiny arrays nested in it.
    const padding = Array.from({ length: 300_000 }, (_, i) => `"x${i}":0`).join(',')
    const value = `{"a":1,"b":[${times('[[]]', 2_000_000)}]}`
    const padded = parse(base.text.replace('"header":{', `"header":{${padding},`).replace('"value":{"a":1}', `"value":${value}`))
    expect(padded.refusal).to.equal(undefined)
    expect(padded.batch!.messages).to.deep.equal(ok.batch!.messages)
    expect(padded.batch!.data[0]!.value).to.equal(value)
    expect(padded.nodes).to.equal(ok.nodes)
  })
})
