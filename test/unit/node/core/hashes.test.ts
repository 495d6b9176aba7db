import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { ParleyError } from '../../../../node/core/errors.js'
import {
  batchHash,
  batchManifest,
  broadcastContext,
  dataHash,
  dataRefsHash,
  dataRefsJson,
  dataValueHash,
  datatypeTopic,
  formatPin,
  groupHash,
  groupJson,
  identityTopic,
  messageHash,
  messageHeaderJson,
  nonceKey,
  parsePin,
  privateContext,
  privatePin,
  sortGroupMembers,
  splitUuids,
  uuidsBytes32,
  type MessageHeader,
} from '../../../../node/core/hashes.js'
import type { BatchId, DataId, Hash, IdentityId, MessageId, TxId } from '../../../../node/core/ids.js'
import { compactJson } from '../../../../node/core/json.js'
import type { Timestamp } from '../../../../node/core/time.js'

const sha = (s: string): string => createHash('sha256').update(s).digest('hex')
const h = (s: string): Hash => s as Hash

// Vectors from FireFly's own tests (pkg/core/*_test.go and its BatchPin uuids packing).
const GROUP = h('3fcc7e07069e441f07c9f6b26f16fcb2dc896222d72888675082fd308440d9ae')
const DATAHASH = h('2468d5c26cc85968acaf8b96d09476453916ea4eab41632a31d09efc7ab297d2')
const MESSAGE_HASH = h('b5b9da88ed83403754bf78ed596eab70b803fd02108635fb932c2416d9e379b7')
const TX = '5d2c7e3a-1b4f-4e8a-9c6d-2f1e0a9b8c7d' as TxId
const BATCH = '0b1d5c63-7a2e-4d5e-9a0b-4f2e1c3d5a6b' as BatchId

const knownHeader: MessageHeader = {
  id: '2cd37805-5f40-4e12-962e-67868cde3049' as MessageId,
  cid: '39296b6e-91b9-4a61-b279-833c85b04d94' as MessageId,
  type: 'private',
  txtype: 'batch_pin',
  author: '0x12345',
  created: '2021-05-04T04:55:03.123456789Z' as Timestamp,
  namespace: 'ns1',
  group: GROUP,
  topics: ['topic1', 'topic2'],
  tag: 'tag1',
  datahash: DATAHASH,
}

describe("hash and pin formulas, with FireFly's vectors", () => {
  describe('data hash (data.go CalcHash)', () => {
    it('hashes a value alone: {} → 44136fa3…', () => {
      expect(dataValueHash('{}')).to.equal('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a')
      expect(dataHash({ valueRaw: '{}' })).to.equal('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a')
    })

    it('takes the blob hash when there is no value, or the value is JSON null', () => {
      const blob = h('22440fcf4ee9ac8c1a83de36c3a9ef39f838d960971dc79b274718392f1735f9')
      expect(dataHash({ blobHash: blob })).to.equal(blob)
      expect(dataHash({ valueRaw: null, blobHash: blob })).to.equal(blob)
      expect(dataHash({ valueRaw: 'null', blobHash: blob })).to.equal(blob)
      // TestHashDataNull
      const b2 = h('6014cbaf6bde9f9d755f347cb326db88859475e9d1a215d5dc4ccd8ae9caec7c')
      expect(dataHash({ valueRaw: 'null', blobHash: b2 })).to.equal(b2)
    })

    it('hashes value and blob together as the two hex strings concatenated (the raw, un-compacted vectors)', () => {
      const blob = h('bec1b07d757894d5f8b0d6f09530ef89cb2168b3c00df12efbb6cf3d2937e7e1')
      expect(dataHash({ valueRaw: '{\n\t\t\t"filename": "file.ext"\n\t\t}', blobHash: blob })).to.equal(
        '8c58a0dc3b9d240e6e3066126e58f5853a18161733d2350f9e7488754e7160ec',
      )
      expect(dataHash({ valueRaw: '{\n\t\t\t"filename": "file.ext",\n\t\t\t"path": "/path/to"\n\t\t}', blobHash: blob })).to.equal(
        'be66bddaa0fc6e1da4d2989bb55560a36ac36c5b620d81ad1cc5f3ce5f7ee319',
      )
      expect(
        dataHash({
          valueRaw: '{\n\t\t\t"name": "use this",\n\t\t\t"filename": "ignore this",\n\t\t\t"path": "ignore this too"\n\t\t}',
          blobHash: blob,
        }),
      ).to.equal('5ed9e8c156d590c44c59dfa3455d556ab6a523c2e62cc5e699398ff7fcfd9313')
      // TestSealBlobAndHashOnly
      const blob2 = h('22440fcf4ee9ac8c1a83de36c3a9ef39f838d960971dc79b274718392f1735f9')
      expect(dataHash({ valueRaw: '{}', blobHash: blob2 })).to.equal(
        sha('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a22440fcf4ee9ac8c1a83de36c3a9ef39f838d960971dc79b274718392f1735f9'),
      )
    })

    it('refuses neither value nor blob with INVALID_FIELD "data value is null"', () => {
      for (const d of [{}, { valueRaw: null }, { valueRaw: 'null' }, { valueRaw: '' }, { valueRaw: 'null', blobHash: null }]) {
        expect(() => dataHash(d)).to.throw(ParleyError, 'data value is null').with.property('code', 'INVALID_FIELD')
      }
    })

    it('hashes the value text as given: compaction is the caller’s step, and changes the hash', () => {
      const received = '{ "b": 1.0, "a": "<x>" }'
      expect(dataHash({ valueRaw: compactJson(received) })).to.equal(sha('{"b":1.0,"a":"\\u003cx\\u003e"}'))
      expect(dataHash({ valueRaw: received })).to.not.equal(dataHash({ valueRaw: compactJson(received) }))
    })
  })

  describe('data refs hash = header.datahash (data.go DataRefs.Hash)', () => {
    const refs = [
      { id: 'e3a3b714-7e49-4c73-a4ea-87a50b19961a' as DataId, hash: GROUP },
      { id: 'cc66b23f-d340-4333-82d5-b63adc1c3c07' as DataId, hash: h('1d1462e02d7acee49a8448267c65067e0bec893c9a0c050b9835efa376fec046') },
      { id: '189c8185-2b92-481a-847a-e57595ab3541' as DataId, hash: h('284b535da66aa0734af56c708426d756331baec3bce3079e508003bcf4738ee6') },
    ]

    it('matches TestSealKnownMessage: 2468d5c2…', () => {
      expect(dataRefsJson(refs)).to.equal(
        '[{"id":"e3a3b714-7e49-4c73-a4ea-87a50b19961a","hash":"3fcc7e07069e441f07c9f6b26f16fcb2dc896222d72888675082fd308440d9ae"},{"id":"cc66b23f-d340-4333-82d5-b63adc1c3c07","hash":"1d1462e02d7acee49a8448267c65067e0bec893c9a0c050b9835efa376fec046"},{"id":"189c8185-2b92-481a-847a-e57595ab3541","hash":"284b535da66aa0734af56c708426d756331baec3bce3079e508003bcf4738ee6"}]',
      )
      expect(dataRefsHash(refs)).to.equal(DATAHASH)
    })

    it('hashes [] for a message without data', () => {
      expect(dataRefsHash([])).to.equal(sha('[]'))
    })

    it('normalises ids and hashes as Go re-marshals them (lowercase, no 0x)', () => {
      const shouted = refs.map((r) => ({ id: r.id.toUpperCase() as DataId, hash: h('0x' + r.hash.toUpperCase()) }))
      expect(dataRefsHash(shouted)).to.equal(DATAHASH)
    })
  })

  describe('message hash (message.go MessageHeader.Hash)', () => {
    it('writes Go struct order and hashes to b5b9da88…', () => {
      expect(messageHeaderJson(knownHeader)).to.equal(
        '{"id":"2cd37805-5f40-4e12-962e-67868cde3049","cid":"39296b6e-91b9-4a61-b279-833c85b04d94","type":"private","txtype":"batch_pin","author":"0x12345","created":"2021-05-04T04:55:03.123456789Z","namespace":"ns1","group":"3fcc7e07069e441f07c9f6b26f16fcb2dc896222d72888675082fd308440d9ae","topics":["topic1","topic2"],"tag":"tag1","datahash":"2468d5c26cc85968acaf8b96d09476453916ea4eab41632a31d09efc7ab297d2"}',
      )
      expect(messageHash(knownHeader)).to.equal(MESSAGE_HASH)
    })

    it('omits unset optional fields (absent, null or empty) but always writes type', () => {
      const header: MessageHeader = {
        id: knownHeader.id,
        cid: null,
        type: 'broadcast',
        txtype: null,
        author: '',
        key: undefined,
        created: null,
        namespace: '',
        group: null,
        topics: [],
        tag: '',
        datahash: null,
        txparent: null,
      }
      expect(messageHeaderJson(header)).to.equal('{"id":"2cd37805-5f40-4e12-962e-67868cde3049","type":"broadcast"}')
    })

    it('places key after author and txparent last, with its id omitted when unset', () => {
      const json = messageHeaderJson({ ...knownHeader, key: '0xabc', txparent: { type: 'batch_pin', id: TX } })
      expect(json).to.contain('"author":"0x12345","key":"0xabc","created"')
      expect(json.endsWith(`"datahash":"${DATAHASH}","txparent":{"type":"batch_pin","id":"${TX}"}}`)).to.equal(true)
      expect(messageHeaderJson({ id: knownHeader.id, type: 'broadcast', txparent: { type: 'batch_pin' } })).to.equal(
        '{"id":"2cd37805-5f40-4e12-962e-67868cde3049","type":"broadcast","txparent":{"type":"batch_pin"}}',
      )
    })

    it('hashes created as a Go member re-marshals it: UTC, trailing zeros trimmed', () => {
      const at = (created: string): Hash => messageHash({ ...knownHeader, created: created as Timestamp })
      expect(at('2021-05-04T06:55:03.123456789+02:00')).to.equal(MESSAGE_HASH)
      expect(at('2021-05-04T04:55:03.1234567890Z')).to.equal(MESSAGE_HASH)
      const trimmed = messageHeaderJson({ ...knownHeader, created: '2021-05-04T04:55:03.120000Z' as Timestamp })
      expect(trimmed).to.contain('"created":"2021-05-04T04:55:03.12Z"')
      expect(messageHeaderJson({ ...knownHeader, created: '2021-05-04T04:55:03.000Z' as Timestamp })).to.contain('"created":"2021-05-04T04:55:03Z"')
      expect(messageHeaderJson({ ...knownHeader, created: '0001-01-01T00:00:00Z' as Timestamp })).to.contain('"created":null')
      for (const bad of ['2021-02-30T00:00:00Z', '2021-05-04 04:55:03Z', '2021-05-04T24:00:00Z', 'yesterday']) {
        expect(() => at(bad)).to.throw(ParleyError, /header.created/)
      }
    })

    it('normalises ids and hashes as Go re-marshals them', () => {
      expect(
        messageHash({
          ...knownHeader,
          id: knownHeader.id.toUpperCase() as MessageId,
          group: h('0x' + GROUP.toUpperCase()),
        }),
      ).to.equal(MESSAGE_HASH)
      expect(() => messageHash({ ...knownHeader, group: h('abc') })).to.throw(ParleyError)
    })

    it('HTML-escapes header strings like Go', () => {
      expect(messageHeaderJson({ id: knownHeader.id, type: 'broadcast', author: 'a<b>&c' })).to.contain('"author":"a\\u003cb\\u003e\\u0026c"')
    })
  })

  describe('group hash (group.go)', () => {
    it('matches group_test.go: c2e5a422…', () => {
      const g = { namespace: 'ok', name: 'ok', members: [{ identity: '0x12345', node: '8b5c0d39-925f-4579-9c60-54f3e846ab99' as IdentityId }] }
      expect(groupJson(g)).to.equal('{"namespace":"ok","name":"ok","members":[{"identity":"0x12345","node":"8b5c0d39-925f-4579-9c60-54f3e846ab99"}]}')
      expect(groupHash(g)).to.equal('c2e5a42207ce2b48d67a4682a96f914ec0386acc13615550aa503b0841da8824')
    })

    it('sorts members by identity (byte order), keeps name even when empty, omits an empty namespace', () => {
      const a = { identity: 'did:firefly:org/b', node: '8B5C0D39-925F-4579-9C60-54F3E846AB99' as IdentityId }
      const b = { identity: 'did:firefly:org/a', node: '11111111-925f-4579-9c60-54f3e846ab99' as IdentityId }
      expect(groupJson({ name: '', members: [a, b] })).to.equal(
        '{"name":"","members":[{"identity":"did:firefly:org/a","node":"11111111-925f-4579-9c60-54f3e846ab99"},{"identity":"did:firefly:org/b","node":"8b5c0d39-925f-4579-9c60-54f3e846ab99"}]}',
      )
      expect(groupHash({ namespace: 'ns', name: 'g', members: [a, b] })).to.equal(groupHash({ namespace: 'ns', name: 'g', members: [b, a] }))
      // UTF-16 order would put U+FFFF after U+10000; Go's byte order puts it before.
      expect(sortGroupMembers([{ identity: '\u{10000}' }, { identity: '\uFFFF' }]).map((m) => m.identity)).to.deep.equal(['\uFFFF', '\u{10000}'])
    })
  })

  describe('batch hash (batch_processor.go sealBatch)', () => {
    it('writes the manifest exactly and hashes it: 5548d4c8…', () => {
      const manifest = batchManifest({
        id: BATCH,
        txId: TX,
        messages: [{ id: knownHeader.id, hash: MESSAGE_HASH, topics: 2 }],
        data: [{ id: 'e3a3b714-7e49-4c73-a4ea-87a50b19961a' as DataId, hash: GROUP }],
      })
      expect(manifest).to.equal(
        `{"version":1,"id":"${BATCH}","tx":{"type":"batch_pin","id":"${TX}"},"messages":[{"id":"${knownHeader.id}","hash":"${MESSAGE_HASH}","topics":2}],"data":[{"id":"e3a3b714-7e49-4c73-a4ea-87a50b19961a","hash":"${GROUP}"}]}`,
      )
      expect(batchHash(manifest)).to.equal('5548d4c84e34e63f9bdeec82449d00c75b2e1bff8e3584716d648fe450d9e399')
    })

    it('writes empty lists as []', () => {
      expect(batchManifest({ id: BATCH, txId: TX, messages: [], data: [] })).to.equal(
        `{"version":1,"id":"${BATCH}","tx":{"type":"batch_pin","id":"${TX}"},"messages":[],"data":[]}`,
      )
    })
  })

  describe('contexts and pins', () => {
    it('broadcast context = sha256(topic): topicA → 19b76a90…', () => {
      expect(broadcastContext('topicA')).to.equal('19b76a907de50cf4472aeca0745bcdb7ab7b98e88b66e457351029178e3bb8f6')
    })

    it('private context and pin: topic1 in group 3fcc7e07… by did:firefly:org/org_0, nonce 0 → 5b7fe0c7… / 83c11a4a…', () => {
      const did = 'did:firefly:org/org_0'
      expect(privateContext('topic1', GROUP)).to.equal('5b7fe0c79f2b464c395de9733a03c7709bd94d9ba2f5664d0a9bcc0e764fecc6')
      const pin = privatePin('topic1', GROUP, did, 0)
      expect(pin).to.equal('83c11a4a4b2dee17e4b0bb6c068f7110e1cbade4a74ec5202ce83a2587602130')
      expect(privatePin('topic1', GROUP, did, 0n)).to.equal(pin)
      const groupRaw = Buffer.from(GROUP, 'hex')
      expect(nonceKey('topic1', GROUP, did)).to.equal(createHash('sha256').update('topic1').update(groupRaw).update(did).digest('hex'))
      const nonce5 = Buffer.from([0, 0, 0, 0, 0, 0, 0, 5])
      expect(privatePin('topic1', GROUP, did, 5)).to.equal(
        createHash('sha256').update('topic1').update(groupRaw).update(did).update(nonce5).digest('hex'),
      )
    })

    it('formats pins as hash:%.16d and reads them back', () => {
      const pin = h('83c11a4a4b2dee17e4b0bb6c068f7110e1cbade4a74ec5202ce83a2587602130')
      expect(formatPin(pin, 0)).to.equal(`${pin}:0000000000000000`)
      expect(formatPin(pin, 12345n)).to.equal(`${pin}:0000000000012345`)
      expect(formatPin(pin, 12345678901234567n)).to.equal(`${pin}:12345678901234567`)
      expect(parsePin(`${pin}:0000000000012345`)).to.deep.equal({ hash: pin, nonce: 12345 })
      for (const bad of [pin, `${pin}:`, `${pin}:-1`, `${pin}:12x`, `abc:1`, `${pin}:99999999999999999999`]) {
        expect(() => parsePin(bad)).to.throw(ParleyError)
      }
    })

    it('refuses a nonce that is negative, fractional or beyond int64', () => {
      for (const n of [-1, 1.5, NaN, 2n ** 63n]) expect(() => privatePin('t', GROUP, 'did', n)).to.throw(ParleyError)
    })
  })

  describe('definition topics', () => {
    it('datatype topic = sha256("datatype" ‖ namespace ‖ name): ns "ok", name "ok" → 8e23c0a7…', () => {
      expect(datatypeTopic('ok', 'ok')).to.equal('8e23c0a7fa9ec15c68a662e0e502933facb3d249409efa2b4f89d479b9f990cb')
      // FireFly sends definitions with the namespace blanked, so in practice it is sha256("datatype" + name).
      expect(datatypeTopic('ok')).to.equal(sha('datatypeok'))
    })

    it('identity topic = sha256(DID)', () => {
      expect(identityTopic('did:firefly:org/org_0')).to.equal(sha('did:firefly:org/org_0'))
    })
  })

  describe('on-chain uuids', () => {
    it('packs transaction id ‖ batch id and unpacks them', () => {
      const packed = '0x5d2c7e3a1b4f4e8a9c6d2f1e0a9b8c7d0b1d5c637a2e4d5e9a0b4f2e1c3d5a6b'
      expect(uuidsBytes32(TX, BATCH)).to.equal(packed)
      expect(uuidsBytes32(TX.toUpperCase() as TxId, BATCH)).to.equal(packed)
      expect(splitUuids(packed)).to.deep.equal({ txId: TX, batchId: BATCH })
      expect(splitUuids(packed.slice(2).toUpperCase())).to.deep.equal({ txId: TX, batchId: BATCH })
      expect(() => splitUuids('0x1234')).to.throw(ParleyError)
      expect(() => uuidsBytes32('nope' as TxId, BATCH)).to.throw(ParleyError)
    })
  })
})
