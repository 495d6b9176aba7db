import { expect } from 'chai'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { goJson } from '../../../../../node/core/json.js'
import { dataRefsHash, messageHash, sha256Hex } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type DatatypeId, type Hash, type MessageId, type SubscriptionId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import { eventRenderer, presentBatch, presentData, presentDatatype, presentMessage } from '../../../../../node/api/present.js'
import { presentGroup } from '../../../../../node/api/routes/groups.js'
import { presentSubscription } from '../../../../../node/api/routes/subscriptions.js'
import { SCHEMAS, type SchemaName } from '../../../../../node/api/openapi/schemas.js'
import type { BatchRecord, Data, Datatype, Group, Header, Message, NodeEvent, Subscription } from '../../../../../node/model/index.js'

/**
 * The shapes the API description declares are the shapes the presenters write: each answer, as the API sends it,
 * validates against its component, and every field it carries is one the component names.
 */
describe('api: the OpenAPI components against what the presenters write', () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  ajv.addSchema({ $id: 'parley', components: { schemas: SCHEMAS } })

  /** The value as it goes over the wire, checked against `name`; answers the parsed value. */
  function conforms(name: SchemaName, value: unknown): Record<string, unknown> {
    const wire = JSON.parse(goJson(value)) as Record<string, unknown>
    const validate = ajv.getSchema(`parley#/components/schemas/${name}`)!
    expect(validate(wire), `${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(wire)}`).to.equal(true)
    const declared = Object.keys((SCHEMAS[name] as { properties: Record<string, unknown> }).properties)
    expect(Object.keys(wire).filter((k) => !declared.includes(k)), `${name}: fields the component does not name`).to.deep.equal([])
    return wire
  }

  const refs = [{ id: newId<DataId>(), hash: sha256Hex('d') }]
  const header: Header = {
    id: newId<MessageId>(),
    type: 'private',
    txtype: 'batch_pin',
    author: 'did:firefly:org/org0',
    key: '0x' + 'aa'.repeat(20),
    created: now(),
    namespace: 'default',
    topics: ['orders'],
    tag: 'order',
    group: sha256Hex('g'),
    datahash: dataRefsHash(refs),
  }
  const message: Message = { header, hash: messageHash(header), state: 'confirmed', confirmed: now(), batch: newId<BatchId>(), txid: newId<TxId>(), data: refs, idempotencyKey: 'k1' }
  const data: Data = {
    id: refs[0]!.id,
    validator: 'json',
    namespace: 'default',
    hash: refs[0]!.hash,
    created: now(),
    datatype: { name: 'widget', version: '1' },
    value: '{"size":3}',
    blob: { hash: sha256Hex('b'), size: 10, name: 'b.bin', public: 'bafy' },
  }

  it('Message: as sent, as listed (topic alias, pins) and with its data inline', () => {
    conforms('Message', presentMessage(message))
    const listed = conforms('Message', presentMessage(message, { topicAlias: true, data: [data] }))
    expect(listed.data).to.have.length(1)
  })

  it('Data, Datatype, Batch and Group', () => {
    conforms('Data', presentData(data))
    conforms('Data', presentData({ ...data, value: null, datatype: undefined }))
    const datatype: Datatype = { id: newId<DatatypeId>(), message: newId<MessageId>(), validator: 'json', namespace: 'default', name: 'widget', version: '1', hash: sha256Hex('s'), created: now(), value: '{"type":"object"}', orderedAt: 12 }
    conforms('Datatype', presentDatatype(datatype))
    const batch: BatchRecord = { id: newId<BatchId>(), type: 'broadcast', namespace: 'default', author: header.author, key: header.key, created: now(), hash: sha256Hex('x'), manifest: '{"messages":[],"data":[]}', txId: newId<TxId>(), payloadRef: 'bafy', state: 'pinned', local: true }
    conforms('Batch', presentBatch(batch))
    const group: Group = { hash: header.group!, namespace: 'default', name: 'g', members: [{ identity: 'did:firefly:org/org0', node: newId() }], created: now(), message: newId<MessageId>() }
    conforms('Group', presentGroup(group))
  })

  it('Event, alone and with the message it refers to', () => {
    const event: NodeEvent = { id: newId(), sequence: 7, type: 'message_confirmed', namespace: 'default', reference: header.id, correlator: header.id, tx: message.txid!, topic: 'orders', created: now() }
    conforms('Event', eventRenderer({ contract: '0x' + 'c0'.repeat(20) })({ event, refs: {} }))
    const enriched = conforms('Event', eventRenderer({ contract: '0x' + 'c0'.repeat(20) })({ event, refs: { message } }))
    expect(enriched).to.have.property('message')
  })

  it('Subscription, with its filter and status', () => {
    const sub: Subscription = {
      id: newId<SubscriptionId>(),
      namespace: 'default',
      name: 'orders',
      transport: 'websockets',
      filter: { events: 'message_confirmed', message: { tag: '^order$' } },
      options: { firstEvent: 'oldest', readAhead: 10 },
      created: now(),
    }
    conforms('Subscription', presentSubscription(sub, { currentOffset: 3 }))
  })
})
