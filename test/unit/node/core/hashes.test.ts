import { expect } from 'chai'
import { createHash, type Hash as NodeHash } from 'node:crypto'
import fc from 'fast-check'
import { ParleyError } from '../../../../node/core/errors.js'
import {
  batchHash,
  batchManifest,
  broadcastContext,
  dataDigest,
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

const sha = (s: string | Uint8Array): string => createHash('sha256').update(s).digest('hex')
const h = (s: string): Hash => s as Hash

/*
 * Each vector says where it comes from:
 * - "FireFly <file> <test>": hard-coded in that Go test of hyperledger/firefly (for the private pin, the bytes hashed
 *   are hard-coded there and the test hashes them itself, as this one does);
 * - "derived": no FireFly test has it. It is sha256 of the formula, so it only pins the formula down; each derived
 *   vector is also computed by ffGo below, a second derivation written from FireFly's Go code rather than from
 *   node/core/hashes.ts, and the two must agree.
 */

// FireFly pkg/core/message_test.go TestSealKnownMessage.
const GROUP = h('3fcc7e07069e441f07c9f6b26f16fcb2dc896222d72888675082fd308440d9ae')
const DATAHASH = h('2468d5c26cc85968acaf8b96d09476453916ea4eab41632a31d09efc7ab297d2')
const MESSAGE_HASH = h('b5b9da88ed83403754bf78ed596eab70b803fd02108635fb932c2416d9e379b7')
// Derived: ids of our own for the batch hash and the uuids packing.
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

/**
 * A second derivation of the formulas node/core/hashes.ts implements, written from reading FireFly's Go code and kept
 * in its shape: a hash.Hash written to piece by piece (Go's HashResult reads the sum and leaves the hash to be
 * written on), []byte(string) as UTF-8, a Bytes32 or UUID as its raw bytes, binary.BigEndian for the nonce, and
 * encoding/json's struct marshalling with its field order and omitempty. Its only use is to disagree with hashes.ts
 * if either has a formula wrong, so it shares no code with it.
 */
const ffGo = (() => {
  /** crypto/sha256's hash.Hash: Write appends; HashResult (Sum(nil)) does not reset, as maskContext relies on. */
  class GoHash {
    private readonly h: NodeHash = createHash('sha256')
    Write(b: Uint8Array): void {
      this.h.update(b)
    }
    HashResult(): string {
      return this.h.copy().digest('hex')
    }
  }
  /** []byte(s) */
  const bytes = (s: string): Buffer => Buffer.from(s, 'utf8')
  /** (*fftypes.Bytes32)[:] from its text form */
  const bytes32 = (hex: string): Buffer => {
    const b = Buffer.from(hex, 'hex')
    if (b.length !== 32) throw new Error(`not a Bytes32: ${hex}`)
    return b
  }
  /** fftypes.UUID (a [16]byte) from its text form */
  const uuid = (u: string): Buffer => {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(u)) throw new Error(`not a UUID: ${u}`)
    return Buffer.from(u.replace(/-/g, ''), 'hex')
  }
  /** UUID.MarshalText: lowercase, hyphenated */
  const uuidText = (b: Buffer): string => {
    const x = b.toString('hex')
    return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
  }
  /** binary.BigEndian.PutUint64 into an 8-byte slice */
  const putUint64 = (n: bigint): Buffer => {
    const out = Buffer.alloc(8)
    for (let i = 7; i >= 0; i--) {
      out[i] = Number(n & 0xffn)
      n >>= 8n
    }
    return out
  }

  /** encoding/json's string encoder with HTML escaping on (json.Marshal's default). */
  const jsonString = (s: string): string => {
    let out = '"'
    for (const ch of s) {
      const c = ch.codePointAt(0)!
      if (ch === '"' || ch === '\\') out += '\\' + ch
      else if (ch === '\n') out += '\\n'
      else if (ch === '\r') out += '\\r'
      else if (ch === '\t') out += '\\t'
      else if (c < 0x20 || ch === '<' || ch === '>' || ch === '&' || c === 0x2028 || c === 0x2029) out += '\\u' + c.toString(16).padStart(4, '0')
      else out += ch
    }
    return out + '"'
  }
  /** A struct's fields in declaration order; undefined is a field that omitempty leaves out. */
  const struct = (fields: [string, string | undefined][]): string =>
    `{${fields.filter(([, v]) => v !== undefined).map(([k, v]) => `${jsonString(k)}:${v}`).join(',')}}`
  const omitempty = (s: string | undefined, write: (s: string) => string): string | undefined => (s ? write(s) : undefined)

  interface Message {
    header: { id: string; topics: string[]; group?: string; author: string }
    hash: string
  }

  return {
    /** aggregator.go broadcastContext */
    broadcastContext(topic: string): string {
      const h = new GoHash()
      h.Write(bytes(topic))
      return h.HashResult()
    },

    /** aggregator.go privateContext */
    privateContext(topic: string, group: string): string {
      const h = new GoHash()
      h.Write(bytes(topic))
      h.Write(bytes32(group))
      return h.HashResult()
    },

    /** aggregator.go privatePinHash: what a receiver expects as the next pin of (topic, group, identity). */
    privatePinHash(topic: string, group: string, identity: string, nonce: bigint): string {
      const h = new GoHash()
      h.Write(bytes(topic))
      h.Write(bytes32(group))
      h.Write(bytes(identity))
      h.Write(putUint64(nonce > 0n ? nonce : 0n))
      return h.HashResult()
    },

    /**
     * batch_manager.go maskContext, with the nonce getNextNonce would give: one hash.Hash written on through the
     * topic, the group, the author and the nonce, its sums read on the way.
     */
    maskContext(msg: Message, topic: string, nonce: bigint): { msgPinString: string; contextOrPin: string; contextHash?: string; nonceKeyHash?: string } {
      const hashBuilder = new GoHash()
      hashBuilder.Write(bytes(topic))
      if (msg.header.group === undefined) return { msgPinString: '', contextOrPin: hashBuilder.HashResult() }
      hashBuilder.Write(bytes32(msg.header.group))
      const contextHash = hashBuilder.HashResult()
      hashBuilder.Write(bytes(msg.header.author))
      const nonceKeyHash = hashBuilder.HashResult()
      hashBuilder.Write(putUint64(nonce))
      const pin = hashBuilder.HashResult()
      // fmt.Sprintf("%s:%.16d", pin, nonce)
      return { msgPinString: `${pin}:${nonce.toString().padStart(16, '0')}`, contextOrPin: pin, contextHash, nonceKeyHash }
    },

    /** batch_processor.go calculateContexts: every message's topics in order, each context or pin from maskContext. */
    calculateContexts(messages: Message[], nextNonce: (msg: Message, topic: string) => bigint): string[] {
      const pins: string[] = []
      for (const msg of messages) for (const topic of msg.header.topics) pins.push(this.maskContext(msg, topic, nextNonce(msg, topic)).contextOrPin)
      return pins
    },

    /**
     * pkg/core/batch.go (*BatchPayload).Manifest(id).String(), the text batch_processor.go sealBatch hashes:
     * BatchManifest{Version, ID, TX TransactionRef{Type, ID omitempty}, SignerRef{Author, Key} omitempty (never set
     * when sealing), Messages []MessageManifestEntry{MessageRef{ID, Hash} omitempty, Topics}, Data []DataRef{ID, Hash}
     * omitempty}.
     */
    manifestString(batchId: string, tx: { type: string; id: string }, messages: Message[], data: { id: string; hash: string }[]): string {
      const uuidJson = (u: string): string => jsonString(uuidText(uuid(u)))
      const hashJson = (x: string): string => jsonString(bytes32(x).toString('hex'))
      const entries = messages.map((m) =>
        struct([
          ['id', uuidJson(m.header.id)],
          ['hash', hashJson(m.hash)],
          ['topics', String(m.header.topics.length)],
        ]),
      )
      const refs = data.map((d) => struct([['id', uuidJson(d.id)], ['hash', hashJson(d.hash)]]))
      return struct([
        ['version', '1'],
        ['id', uuidJson(batchId)],
        ['tx', struct([['type', jsonString(tx.type)], ['id', omitempty(tx.id, uuidJson)]])],
        ['author', undefined],
        ['key', undefined],
        ['messages', `[${entries.join(',')}]`],
        ['data', `[${refs.join(',')}]`],
      ])
    },

    /** fftypes.HashString */
    hashString(s: string): string {
      const h = new GoHash()
      h.Write(bytes(s))
      return h.HashResult()
    },

    /** ethereum.go buildBatchPinInput's uuids: copy(uuids[0:16], tx); copy(uuids[16:32], batch); ethHexFormatB32. */
    uuids(txId: string, batchId: string): string {
      const uuids = Buffer.alloc(32)
      uuid(txId).copy(uuids, 0)
      uuid(batchId).copy(uuids, 16)
      return '0x' + uuids.toString('hex')
    },
  }
})()

describe("hash and pin formulas: FireFly's vectors, and derived ones checked against a second derivation", () => {
  describe('data hash (data.go CalcHash)', () => {
    it('hashes a value alone: {} → 44136fa3… (FireFly data_test.go TestSealValueOnly)', () => {
      expect(dataValueHash('{}')).to.equal('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a')
      expect(dataHash({ valueRaw: '{}' })).to.equal('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a')
    })

    it('takes the blob hash when there is no value, or the value is JSON null (FireFly data_test.go TestSealBlobOnly, TestHashDataNull)', () => {
      const blob = h('22440fcf4ee9ac8c1a83de36c3a9ef39f838d960971dc79b274718392f1735f9')
      expect(dataHash({ blobHash: blob })).to.equal(blob)
      expect(dataHash({ valueRaw: null, blobHash: blob })).to.equal(blob)
      expect(dataHash({ valueRaw: 'null', blobHash: blob })).to.equal(blob)
      // TestHashDataNull
      const b2 = h('6014cbaf6bde9f9d755f347cb326db88859475e9d1a215d5dc4ccd8ae9caec7c')
      expect(dataHash({ valueRaw: 'null', blobHash: b2 })).to.equal(b2)
    })

    it('hashes value and blob together as the two hex strings concatenated (FireFly data_test.go, raw un-compacted values)', () => {
      const blob = h('bec1b07d757894d5f8b0d6f09530ef89cb2168b3c00df12efbb6cf3d2937e7e1')
      // TestSealBlobFileNamed, TestSealBlobPathNamed, TestSealBlobExplictlyNamed
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

  describe("data digest (Parley's own: the fields a batch carries with a data item that its hash does not cover)", () => {
    const fields = { validator: 'json', namespace: 'default', created: '2024-01-02T03:04:05.678Z', datatypeName: 'widget', datatypeVersion: '1.0', blobHash: null, blobSize: null, blobName: null, blobPublic: null }
    it('hashes the JSON array of the fields in order, absent ones null: 7d1e275a… (checked with sha256sum over the text)', () => {
      // printf '%s' '["json","default","2024-01-02T03:04:05.678Z","widget","1.0",null,null,null,null]' | sha256sum
      expect(dataDigest(fields)).to.equal('7d1e275a2150e9846cc82fe0e9dcd38925cf6a84078348c5c5fe3f9afe73612b')
      const blob = { ...fields, datatypeName: null, datatypeVersion: null, blobHash: 'a'.repeat(64), blobSize: 10, blobName: 'f "1".txt', blobPublic: 'QmX' }
      // Strings escaped as JSON writes them, the size a number.
      expect(dataDigest(blob)).to.equal('75228018744c8ab93a8f3a4940e4c2eb3b6ef763803c50925b8cc0cf6d9252a3')
    })
    it('changes with every field, and tells an absent field from an empty one', () => {
      const variants = [
        fields,
        { ...fields, validator: 'none' },
        { ...fields, namespace: 'other' },
        { ...fields, created: '2024-01-02T03:04:05.679Z' },
        { ...fields, datatypeName: 'nosuch' },
        { ...fields, datatypeVersion: '2' },
        { ...fields, datatypeVersion: '' },
        { ...fields, datatypeName: null, datatypeVersion: null },
        { ...fields, blobHash: 'b'.repeat(64), blobSize: 0, blobName: '', blobPublic: null },
        { ...fields, blobHash: 'b'.repeat(64), blobSize: 1, blobName: '', blobPublic: null },
        { ...fields, blobHash: 'b'.repeat(64), blobSize: 0, blobName: 'x', blobPublic: null },
        { ...fields, blobHash: 'b'.repeat(64), blobSize: 0, blobName: '', blobPublic: 'Qm' },
      ]
      expect(new Set(variants.map(dataDigest)).size).to.equal(variants.length)
    })
  })

  describe('data refs hash = header.datahash (data.go DataRefs.Hash)', () => {
    const refs = [
      { id: 'e3a3b714-7e49-4c73-a4ea-87a50b19961a' as DataId, hash: GROUP },
      { id: 'cc66b23f-d340-4333-82d5-b63adc1c3c07' as DataId, hash: h('1d1462e02d7acee49a8448267c65067e0bec893c9a0c050b9835efa376fec046') },
      { id: '189c8185-2b92-481a-847a-e57595ab3541' as DataId, hash: h('284b535da66aa0734af56c708426d756331baec3bce3079e508003bcf4738ee6') },
    ]

    it('2468d5c2… (FireFly message_test.go TestSealKnownMessage)', () => {
      expect(dataRefsJson(refs)).to.equal(
        '[{"id":"e3a3b714-7e49-4c73-a4ea-87a50b19961a","hash":"3fcc7e07069e441f07c9f6b26f16fcb2dc896222d72888675082fd308440d9ae"},{"id":"cc66b23f-d340-4333-82d5-b63adc1c3c07","hash":"1d1462e02d7acee49a8448267c65067e0bec893c9a0c050b9835efa376fec046"},{"id":"189c8185-2b92-481a-847a-e57595ab3541","hash":"284b535da66aa0734af56c708426d756331baec3bce3079e508003bcf4738ee6"}]',
      )
      expect(dataRefsHash(refs)).to.equal(DATAHASH)
    })

    it('hashes [] for a message without data (derived: Seal sets Data to an empty list)', () => {
      expect(dataRefsHash([])).to.equal(sha('[]'))
    })

    it('normalises ids and hashes as Go re-marshals them (lowercase, no 0x)', () => {
      const shouted = refs.map((r) => ({ id: r.id.toUpperCase() as DataId, hash: h('0x' + r.hash.toUpperCase()) }))
      expect(dataRefsHash(shouted)).to.equal(DATAHASH)
    })
  })

  describe('message hash (message.go MessageHeader.Hash)', () => {
    it('writes Go struct order and hashes to b5b9da88… (FireFly message_test.go TestSealKnownMessage)', () => {
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
    it('c2e5a422… (FireFly group_test.go TestGroupValidation)', () => {
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
      // A member without a node (an org's own entry) is written without one.
      expect(groupJson({ name: 'g', members: [{ identity: 'did:firefly:org/a' }] })).to.equal('{"name":"g","members":[{"identity":"did:firefly:org/a"}]}')
      // UTF-16 order would put U+FFFF after U+10000; Go's byte order puts it before.
      expect(sortGroupMembers([{ identity: '\u{10000}' }, { identity: '\uFFFF' }]).map((m) => m.identity)).to.deep.equal(['\uFFFF', '\u{10000}'])
    })
  })

  describe('a batch a FireFly node wrote (FireFly batch_processor_test.go TestBigBatchEstimate)', () => {
    // The fixture of that test is a batch captured from a FireFly run; the test measures its size and asserts none
    // of its hashes, so these are FireFly's output rather than its test's assertions. Its batch hash is left out:
    // it is not the manifest hash of the batch as the fixture writes it.
    const value = `{"broadcastID":"${'740'.repeat(1000)}"}`
    const dataId = '147743b4-bd23-4da1-bd21-90c4ad9f1650' as DataId
    const header: MessageHeader = {
      id: '2b393190-28e7-4b86-8af6-00906e94989b' as MessageId,
      type: 'broadcast',
      txtype: 'batch_pin',
      author: 'did:firefly:org/org_0',
      key: '0x7e3bb2198959d3a1c3ede9db1587560320ce8998',
      created: '2022-03-18T14:57:32.209734225Z' as Timestamp,
      namespace: 'default',
      topics: ['default'],
      tag: 'perf_02e01e12-b918-4982-8407-2f9a08d673f3_740',
      datahash: h('b5b0c398450707b885f5973248ffa9a542f4c2f54860eba6c2d7aee48d0f9109'),
    }

    it('its data hash, datahash and message hash are ours', () => {
      expect(dataHash({ valueRaw: value })).to.equal('8ed265110f60711f79de1bc87b476e00bd8f8be436cdda3cf27fbf886d5e6ce6')
      expect(dataRefsHash([{ id: dataId, hash: h('8ed265110f60711f79de1bc87b476e00bd8f8be436cdda3cf27fbf886d5e6ce6') }])).to.equal(header.datahash)
      expect(messageHash(header)).to.equal('5fc430f1c8134c6c32c4e34ef65984843bb77bb19e73c862d464669537d96dbd')
    })
  })

  describe('batch hash (batch_processor.go sealBatch; no FireFly test hashes a manifest)', () => {
    const manifestInput = {
      id: BATCH,
      txId: TX,
      messages: [{ id: knownHeader.id, hash: MESSAGE_HASH, topics: 2 }],
      data: [{ id: 'e3a3b714-7e49-4c73-a4ea-87a50b19961a' as DataId, hash: GROUP }],
    }
    const asFireFly = () =>
      ffGo.manifestString(
        BATCH,
        { type: 'batch_pin', id: TX },
        [{ header: { id: knownHeader.id, topics: ['topic1', 'topic2'], author: '' }, hash: MESSAGE_HASH }],
        [{ id: 'e3a3b714-7e49-4c73-a4ea-87a50b19961a', hash: GROUP }],
      )

    it('writes the manifest exactly and hashes it: 5548d4c8… (derived, and equal to the second derivation)', () => {
      const manifest = batchManifest(manifestInput)
      expect(manifest).to.equal(
        `{"version":1,"id":"${BATCH}","tx":{"type":"batch_pin","id":"${TX}"},"messages":[{"id":"${knownHeader.id}","hash":"${MESSAGE_HASH}","topics":2}],"data":[{"id":"e3a3b714-7e49-4c73-a4ea-87a50b19961a","hash":"${GROUP}"}]}`,
      )
      expect(batchHash(manifest)).to.equal('5548d4c84e34e63f9bdeec82449d00c75b2e1bff8e3584716d648fe450d9e399')
      expect(manifest, 'the manifest as FireFly marshals it').to.equal(asFireFly())
      expect(ffGo.hashString(asFireFly())).to.equal('5548d4c84e34e63f9bdeec82449d00c75b2e1bff8e3584716d648fe450d9e399')
    })

    it('writes empty lists as []', () => {
      expect(batchManifest({ id: BATCH, txId: TX, messages: [], data: [] })).to.equal(
        `{"version":1,"id":"${BATCH}","tx":{"type":"batch_pin","id":"${TX}"},"messages":[],"data":[]}`,
      )
      expect(batchManifest({ id: BATCH, txId: TX, messages: [], data: [] })).to.equal(ffGo.manifestString(BATCH, { type: 'batch_pin', id: TX }, [], []))
    })

    it('agrees with the second derivation on any manifest: ids in any case, any topic counts, any tx type', () => {
      const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'))
      const anyCase = fc.tuple(fc.uuid(), fc.boolean()).map(([u, up]) => (up ? u.toUpperCase() : u))
      fc.assert(
        fc.property(
          anyCase,
          anyCase,
          fc.constantFrom('batch_pin', 'unpinned', 'contract_invoke_pin'),
          fc.array(fc.record({ id: anyCase, hash: hex32, topics: fc.nat({ max: 10 }) }), { maxLength: 6 }),
          fc.array(fc.record({ id: anyCase, hash: hex32 }), { maxLength: 6 }),
          (id, txId, txType, messages, data) => {
            const ours = batchManifest({
              id: id as BatchId,
              txId: txId as TxId,
              txType,
              messages: messages.map((m) => ({ id: m.id as MessageId, hash: h(m.hash), topics: m.topics })),
              data: data.map((d) => ({ id: d.id as DataId, hash: h(d.hash) })),
            })
            const theirs = ffGo.manifestString(
              id,
              { type: txType, id: txId },
              messages.map((m) => ({ header: { id: m.id, topics: Array.from({ length: m.topics }, (_, i) => `t${i}`), author: '' }, hash: m.hash })),
              data,
            )
            expect(ours).to.equal(theirs)
            expect(batchHash(ours)).to.equal(ffGo.hashString(theirs))
          },
        ),
        { numRuns: 300 },
      )
    })
  })

  describe('contexts and pins (batch_manager.go maskContext, aggregator.go)', () => {
    it('broadcast context = sha256(topic): topic1 → 9e065a7c… (FireFly batch_manager_test.go TestLoadContextsBroadcast)', () => {
      expect(broadcastContext('topic1')).to.equal('9e065a7cbddfc57be742bc32956674c3c389521ac2bbb1dce0500d5131fede75')
    })

    it('broadcast context: topicA → 19b76a90… (derived, and equal to the second derivation)', () => {
      expect(broadcastContext('topicA')).to.equal('19b76a907de50cf4472aeca0745bcdb7ab7b98e88b66e457351029178e3bb8f6')
      expect(ffGo.broadcastContext('topicA')).to.equal('19b76a907de50cf4472aeca0745bcdb7ab7b98e88b66e457351029178e3bb8f6')
      const msg = { header: { id: knownHeader.id, topics: ['topicA'], author: 'did:firefly:org/org_0' }, hash: MESSAGE_HASH }
      expect(ffGo.maskContext(msg, 'topicA', 0n)).to.deep.equal({ msgPinString: '', contextOrPin: broadcastContext('topicA') })
    })

    it('broadcast context stays sha256(topic) past the 4096 topics it remembers', () => {
      for (let i = 0; i < 5000; i++) {
        const topic = `bounded-${i}`
        expect(broadcastContext(topic)).to.equal(createHash('sha256').update(topic).digest('hex'))
      }
      expect(broadcastContext('topic1')).to.equal('9e065a7cbddfc57be742bc32956674c3c389521ac2bbb1dce0500d5131fede75')
    })

    it('private pin = sha256(topic ‖ group ‖ author ‖ nonce big-endian): the bytes FireFly batch_manager_test.go TestE2EDispatchPrivateUnpinned hashes', () => {
      // That test's message (topics topic1 and topic2, group 44dc0861…, author did:firefly:org/abcd) gets nonce 12345
      // (its mocked GetNonce answers 12344); the test hard-codes each pin's preimage and compares the dispatched pin to
      // its sha256.
      const group = h('44dc0861e69d9bab17dd5e90a8898c2ea156ad04e5fabf83119cc010486e6c1b')
      const author = 'did:firefly:org/abcd'
      const preimage = (topicHex: string): Buffer => Buffer.from(topicHex + group + '6469643a66697265666c793a6f72672f61626364' + '0000000000003039', 'hex')
      expect(privatePin('topic1', group, author, 12345)).to.equal(sha(preimage('746f70696331')))
      expect(privatePin('topic2', group, author, 12345)).to.equal(sha(preimage('746f70696332')))
      expect(formatPin(privatePin('topic1', group, author, 12345), 12345)).to.equal(`${sha(preimage('746f70696331'))}:0000000000012345`)
    })

    it('private context and pin: topic1 in group 3fcc7e07… by did:firefly:org/org_0, nonce 0 → 5b7fe0c7… / 83c11a4a… (derived, and equal to the second derivation)', () => {
      const did = 'did:firefly:org/org_0'
      expect(privateContext('topic1', GROUP)).to.equal('5b7fe0c79f2b464c395de9733a03c7709bd94d9ba2f5664d0a9bcc0e764fecc6')
      const pin = privatePin('topic1', GROUP, did, 0)
      expect(pin).to.equal('83c11a4a4b2dee17e4b0bb6c068f7110e1cbade4a74ec5202ce83a2587602130')
      expect(privatePin('topic1', GROUP, did, 0n)).to.equal(pin)

      const msg = { header: { id: knownHeader.id, topics: ['topic1'], group: GROUP, author: did }, hash: MESSAGE_HASH }
      const masked = ffGo.maskContext(msg, 'topic1', 0n)
      expect(masked).to.deep.equal({
        msgPinString: formatPin(pin, 0),
        contextOrPin: '83c11a4a4b2dee17e4b0bb6c068f7110e1cbade4a74ec5202ce83a2587602130',
        contextHash: '5b7fe0c79f2b464c395de9733a03c7709bd94d9ba2f5664d0a9bcc0e764fecc6',
        nonceKeyHash: nonceKey('topic1', GROUP, did),
      })
      expect(ffGo.privateContext('topic1', GROUP)).to.equal(privateContext('topic1', GROUP))
      expect(ffGo.privatePinHash('topic1', GROUP, did, 0n), "the receiver's expectation").to.equal(pin)
    })

    it('agrees with the second derivation on any topic, group, author and nonce, sender and receiver side', () => {
      const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'))
      fc.assert(
        fc.property(fc.string({ unit: 'binary', maxLength: 40 }), hex32, fc.string({ unit: 'binary', maxLength: 60 }), fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }), (topic, group, author, nonce) => {
          const msg = { header: { id: knownHeader.id, topics: [topic], group, author }, hash: MESSAGE_HASH }
          const masked = ffGo.maskContext(msg, topic, nonce)
          expect(privatePin(topic, h(group), author, nonce)).to.equal(masked.contextOrPin)
          expect(formatPin(privatePin(topic, h(group), author, nonce), nonce)).to.equal(masked.msgPinString)
          expect(privateContext(topic, h(group))).to.equal(masked.contextHash)
          expect(nonceKey(topic, h(group), author)).to.equal(masked.nonceKeyHash)
          expect(privatePin(topic, h(group), author, nonce)).to.equal(ffGo.privatePinHash(topic, group, author, nonce))
          expect(broadcastContext(topic)).to.equal(ffGo.broadcastContext(topic))
        }),
        { numRuns: 300 },
      )
    })

    it('contexts of a batch: per message, per topic, in order (batch_processor.go calculateContexts)', () => {
      const did = 'did:firefly:org/org_0'
      const msgs = [
        { header: { id: knownHeader.id, topics: ['a', 'b'], group: GROUP, author: did }, hash: MESSAGE_HASH },
        { header: { id: knownHeader.id, topics: ['b'], group: GROUP, author: did }, hash: MESSAGE_HASH },
      ]
      // getNextNonce: per nonce key, from 0.
      const next = new Map<string, bigint>()
      const nonceOf = (m: { header: { group?: string; author: string } }, topic: string): bigint => {
        const k = `${topic}/${m.header.group}/${m.header.author}`
        const n = next.get(k) ?? 0n
        next.set(k, n + 1n)
        return n
      }
      expect(ffGo.calculateContexts(msgs, nonceOf)).to.deep.equal([privatePin('a', GROUP, did, 0), privatePin('b', GROUP, did, 0), privatePin('b', GROUP, did, 1)])
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
    it('datatype topic = sha256("datatype" ‖ namespace ‖ name): ns "ok", name "ok" → 8e23c0a7… (FireFly datatype_test.go TestDatatypeValidation)', () => {
      expect(datatypeTopic('ok', 'ok')).to.equal('8e23c0a7fa9ec15c68a662e0e502933facb3d249409efa2b4f89d479b9f990cb')
      // FireFly sends definitions with the namespace blanked, so in practice it is sha256("datatype" + name).
      expect(datatypeTopic('ok')).to.equal(sha('datatypeok'))
    })

    it('identity topic = sha256(DID): did:firefly:org/org1 → 7ea456fa… (FireFly identity_test.go TestDefinitionObjects)', () => {
      expect(identityTopic('did:firefly:org/org1')).to.equal('7ea456fa05fc63778e7c4cb22d0498d73f184b2778c11fd2ba31b5980f8490b9')
    })
  })

  describe('on-chain uuids (ethereum.go buildBatchPinInput, buildBatchPin)', () => {
    it("packs transaction id ‖ batch id as FireFly's pin input does (FireFly ethereum_test.go TestInvokeContractWithBatchOK)", () => {
      // The head word of the encoded pin arguments that test expects.
      const tx = '82281f91-6ba8-498a-9e68-c6c6a594b747' as TxId
      const batch = 'f3cce875-b979-48be-99a6-1a64c780330d' as BatchId
      expect(uuidsBytes32(tx, batch)).to.equal('0x82281f916ba8498a9e68c6c6a594b747f3cce875b97948be99a61a64c780330d')
    })

    it("unpacks a BatchPin event's uuids as FireFly does (FireFly ethereum_test.go TestHandleMessageBatchPinOK)", () => {
      expect(splitUuids('0xe19af8b390604051812d7597d19adfb9847d3bfd074249efb65d3fed15f5b0a6')).to.deep.equal({
        txId: 'e19af8b3-9060-4051-812d-7597d19adfb9',
        batchId: '847d3bfd-0742-49ef-b65d-3fed15f5b0a6',
      })
    })

    it('packs and unpacks our ids (derived, and equal to the second derivation); refuses what is not 32 bytes or a UUID', () => {
      const packed = '0x5d2c7e3a1b4f4e8a9c6d2f1e0a9b8c7d0b1d5c637a2e4d5e9a0b4f2e1c3d5a6b'
      expect(uuidsBytes32(TX, BATCH)).to.equal(packed)
      expect(ffGo.uuids(TX, BATCH)).to.equal(packed)
      expect(uuidsBytes32(TX.toUpperCase() as TxId, BATCH)).to.equal(packed)
      expect(splitUuids(packed)).to.deep.equal({ txId: TX, batchId: BATCH })
      expect(splitUuids(packed.slice(2).toUpperCase())).to.deep.equal({ txId: TX, batchId: BATCH })
      expect(() => splitUuids('0x1234')).to.throw(ParleyError)
      expect(() => uuidsBytes32('nope' as TxId, BATCH)).to.throw(ParleyError)
      fc.assert(
        fc.property(fc.uuid(), fc.uuid(), (t, b) => {
          expect(uuidsBytes32(t as TxId, b as BatchId)).to.equal(ffGo.uuids(t, b))
          expect(splitUuids(ffGo.uuids(t, b))).to.deep.equal({ txId: t.toLowerCase(), batchId: b.toLowerCase() })
        }),
        { numRuns: 200 },
      )
    })
  })
})
