import { expect } from 'chai'
import { clientJson } from '../../../../node/core/json.js'
import { dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { eventFrameRenderer, eventRenderer } from '../../../../node/api/present.js'
import type { Header, Message, NodeEvent } from '../../../../node/model/index.js'

describe('event frames', () => {
  it('write a message as the REST rendering does, once per message object', () => {
    const refs = [{ id: newId<DataId>(), hash: ('d'.repeat(63) + '1') as Hash }]
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['<t&>'], tag: 'x', datahash: dataRefsHash(refs) }
    const m: Message = { header, hash: messageHash(header), state: 'confirmed', confirmed: now(), batch: newId<BatchId>(), txid: newId<TxId>(), data: refs }
    const event: NodeEvent = { id: newId(), sequence: 7, type: 'message_confirmed', namespace: 'default', reference: header.id, topic: '<t&>', created: now() }
    const plain = eventRenderer({ contract: '0x' + 'c0'.repeat(20) })
    const frames = eventFrameRenderer({ contract: '0x' + 'c0'.repeat(20) })
    const first = frames({ event, refs: { message: m } })
    expect(clientJson(first)).to.equal(clientJson(plain({ event, refs: { message: m } })))
    // The same object: the text written the first time.
    expect(frames({ event, refs: { message: m } }).message).to.equal(first.message)
    expect(frames({ event, refs: { message: { ...m } } }).message).to.not.equal(first.message)
  })
})
