import { expect } from 'chai'
import { clientJson } from '../../../../node/core/json.js'
import { dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { eventFrameRenderer, eventRenderer, presentIdentity, presentMessage } from '../../../../node/api/present.js'
import type { Header, Identity, Message, NodeEvent } from '../../../../node/model/index.js'

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

describe('presenting records in FireFly\'s shapes: optional fields', () => {
  const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0xab', created: now(), namespace: 'default', topics: ['t'], datahash: dataRefsHash([]) }
  const m: Message = { header, hash: messageHash(header), state: 'confirmed', data: [{ id: newId<DataId>(), hash: 'cc'.repeat(32) as Hash }] }

  it('writes a message with its data inline (value, datatype, blob), or with digests where a peer carried one', () => {
    const d = { id: m.data[0]!.id, validator: 'json', namespace: 'default', hash: m.data[0]!.hash, created: now(), value: '{"a":1}', datatype: { name: 'widget', version: '1' }, blob: { hash: 'ee'.repeat(32) as Hash, size: 3, name: 'a.txt' } }
    expect(JSON.parse(clientJson(presentMessage(m, { data: [d] }))).data).to.deep.equal([
      { id: d.id, hash: d.hash, validator: 'json', datatype: { name: 'widget', version: '1' }, value: { a: 1 }, blob: { hash: d.blob.hash, size: 3, name: 'a.txt' } },
    ])
    expect(JSON.parse(clientJson(presentMessage(m, { data: [{ ...d, value: null, datatype: undefined, blob: undefined }] }))).data).to.deep.equal([{ id: d.id, hash: d.hash, validator: 'json', value: null }])
    const digests = [{ id: d.id, hash: d.hash, digest: 'dd'.repeat(32) as Hash }, { id: newId<DataId>(), hash: d.hash }]
    expect(JSON.parse(clientJson(presentMessage(m, { digests }))).data).to.deep.equal(digests)
    // Pins of a broadcast from its topics, as FireFly shows them, only where the topic alias is asked for.
    expect(presentMessage(m, { topicAlias: true }).pins).to.have.length(1)
    expect(presentMessage(m)).to.not.have.property('pins')
  })

  it('writes an identity\'s description, profile, update time and verifiers only when it has them', () => {
    const base = { id: newId(), did: 'did:firefly:org/org0', type: 'org', namespace: 'ff_system', name: 'org0', messages: { claim: newId<MessageId>() }, created: now() } as unknown as Identity
    expect(Object.keys(presentIdentity(base))).to.deep.equal(['id', 'did', 'type', 'namespace', 'name', 'messages', 'created'])
    const full = presentIdentity({ ...base, parent: newId(), description: 'Org zero', profile: { region: 'eu' }, updated: now() } as unknown as Identity, [{ type: 'ethereum_address', value: '0xab' }])
    expect(Object.keys(full)).to.deep.equal(['id', 'did', 'type', 'parent', 'namespace', 'name', 'description', 'profile', 'messages', 'created', 'updated', 'verifiers'])
    expect(full.verifiers).to.deep.equal([{ type: 'ethereum_address', value: '0xab' }])
  })
})
