import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from '../../../../node/db/database.js'
import type { IdentitiesRepo } from '../../../../node/db/repos/identities.js'
import type { DatatypesRepo } from '../../../../node/db/repos/datatypes.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash, sha256Hex } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type DatatypeId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { compactJson, parseJsonRaw } from '../../../../node/core/json.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { now } from '../../../../node/core/time.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { compileSchema, datatypeNameProblem, datatypeVersionProblem, summarizeErrors } from '../../../../node/data/datatype.js'
import { claimPendingBefore } from '../../../../node/identity/pending.js'
import { datatypeLookup } from '../../../../node/data/schema-cache.js'
import { datatypeDefinitionHandler, datatypeDefinitionValue } from '../../../../node/definitions/datatype.js'
import { parseDatatypeRequest } from '../../../../node/definitions/define-datatype.js'
import { parseFilter } from '../../../../node/api/filters.js'
import { filterSql } from '../../../../node/db/filter-sql.js'
import { DATATYPE_FIELDS } from '../../../../node/db/query-fields.js'
import { SYSTEM_NAMESPACE, TAG_DEFINE_DATATYPE, type Data, type Header, type Message } from '../../../../node/model/index.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'

const KEY_A = '0x' + 'aa'.repeat(20)
const KEY_B = '0x' + 'bb'.repeat(20)
const ORG_A = 'did:firefly:org/orgA'
const WIDGET = compactJson('{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer","minimum":1}},"required":["name"],"additionalProperties":false}')

const problemOf = (f: () => unknown): string => {
  try {
    f()
  } catch (err) {
    expect(err).to.be.instanceOf(ParleyError)
    return `${(err as ParleyError).code}: ${(err as ParleyError).message}`
  }
  throw new Error('expected an error')
}

describe('datatypes: rules', () => {
  it('accepts dotted versions with optional semver pre-release and build suffixes', () => {
    for (const v of ['1', '1.0', '2.3.4', '10.20.30.40', '1.0.0-rc.1', '1.0.0-beta.1', '1.0.0+build.5', '1.0.0-alpha-1.x+exp.sha.5114f85']) {
      expect(datatypeVersionProblem(v), v).to.equal(undefined)
    }
  })

  it('refuses anything else as a version', () => {
    for (const v of ['', 'v1', '1..2', 'latest', '1.', '.1', '1.0-', '1.0+', '1.0-rc..1', '1.0 ', ' 1', '1/2', '1.0.0-rc_1', '9'.repeat(65)]) {
      expect(datatypeVersionProblem(v), JSON.stringify(v)).to.be.a('string')
    }
  })

  it('names follow the FireFly name rule and are not UUIDs', () => {
    for (const n of ['widget', 'a', 'Widget_2.x-y', 'a'.repeat(64)]) expect(datatypeNameProblem(n), n).to.equal(undefined)
    for (const n of ['', '-a', 'a-', 'a b', 'a/b', 'a'.repeat(65), newId<DatatypeId>()]) expect(datatypeNameProblem(n), n).to.be.a('string')
  })

  it('compiles a JSON Schema of an accepted dialect and refuses what is not one (400 with Ajv\'s words)', () => {
    expect(compileSchema(WIDGET)({ name: 'x' })).to.equal(true)
    expect(problemOf(() => compileSchema('"a string"'))).to.match(/^INVALID_FIELD: .*must be a JSON Schema object/)
    expect(problemOf(() => compileSchema('[1]'))).to.match(/^INVALID_FIELD:/)
    expect(problemOf(() => compileSchema('{"type":"foo"}'))).to.match(/^INVALID_FIELD: .*schema\/type must be equal to one of the allowed values/)
    expect(problemOf(() => compileSchema('{"type":"string","pattern":"("}'))).to.match(/^INVALID_FIELD: .*does not compile/)
    expect(problemOf(() => compileSchema('{"$schema":"http://json-schema.org/draft-04/schema#","type":"string"}'))).to.match(/^INVALID_FIELD: .*not supported here; use draft-07/)
    expect(compileSchema('{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}')('x'), 'draft-07, as FireFly').to.equal(true)
  })

  it('never fetches a remote $ref: it fails compilation', () => {
    expect(problemOf(() => compileSchema('{"$ref":"http://127.0.0.1:9/schema.json"}'))).to.match(/^INVALID_FIELD: .*can't resolve reference http:\/\/127\.0\.0\.1:9\/schema\.json/)
  })

  it('compiles each schema on its own: one datatype\'s $id is not visible to another\'s $ref', () => {
    expect(compileSchema('{"$id":"urn:example:shared","type":"string"}')('x')).to.equal(true)
    expect(compileSchema('{"$id":"urn:example:shared","type":"integer"}')(1), 'the same $id twice compiles').to.equal(true)
    expect(problemOf(() => compileSchema('{"$ref":"urn:example:shared"}'))).to.match(/can't resolve reference urn:example:shared/)
    // References within one schema work, including to the 2020-12 meta-schema.
    expect(compileSchema('{"$defs":{"n":{"type":"number"}},"type":"array","items":{"$ref":"#/$defs/n"}}')([1, 2])).to.equal(true)
    expect(compileSchema('{"$ref":"https://json-schema.org/draft/2020-12/schema"}')({ type: 'string' })).to.equal(true)
  })

  it('knows formats (ajv-formats)', () => {
    const v = compileSchema('{"type":"string","format":"email"}')
    expect(v('a@b.example')).to.equal(true)
    expect(v('nope')).to.equal(false)
  })

  it('summarises every Ajv error with where and what, bounded', () => {
    const v = compileSchema(WIDGET)
    expect(v({ size: 0, extra: true })).to.equal(false)
    const text = summarizeErrors(v.errors)
    expect(text).to.contain("(root) must have required property 'name'")
    expect(text).to.contain('(root) must NOT have additional properties: "extra"')
    expect(text).to.contain('/size must be >= 1')
    const many = compileSchema('{"type":"array","items":{"type":"string","enum":["a","b"]}}')
    many(Array.from({ length: 500 }, (_, i) => i))
    const long = summarizeErrors(many.errors)
    expect(long.length).to.be.at.most(2000)
    expect(long).to.contain('/0 must be string')
    expect(long).to.contain('must be equal to one of the allowed values: ["a","b"]')
  })

  it('reads a define request: name, version, schema, validator json only', () => {
    const req = parseDatatypeRequest(parseJsonRaw(`{"name":"widget","version":"1.0","value": ${WIDGET.replace(/,/g, ', ')} }`))
    expect(req).to.deep.equal({ name: 'widget', version: '1.0', value: WIDGET })
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"1","value":{},"validator":"none"}')))).to.match(/^INVALID_FIELD: validator/)
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('[{"name":"w"}]')))).to.equal('INVALID_FIELD: the request body must be a JSON object {name, version, value}')
    expect(parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"1","value":{},"validator":""}')), 'an empty validator is json').to.deep.equal({ name: 'w', version: '1', value: '{}' })
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"version":"1","value":{}}')))).to.match(/^INVALID_FIELD: name is required/)
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"","version":"1","value":{}}')))).to.equal('INVALID_FIELD: name is required')
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","value":{}}')))).to.equal('INVALID_FIELD: version is required')
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"","value":{}}')))).to.equal('INVALID_FIELD: version is required')
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"1","value":null}')))).to.equal('INVALID_FIELD: value (the JSON Schema) is required')
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"latest","value":{}}')))).to.match(/^INVALID_FIELD: datatype version/)
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"1"}')))).to.match(/^INVALID_FIELD: value/)
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"1","value":"x"}')))).to.match(/^INVALID_FIELD: value must be a JSON Schema object/)
    expect(problemOf(() => parseDatatypeRequest(parseJsonRaw('{"name":"w","version":"1","value":{"type":7}}')))).to.match(/^INVALID_FIELD:/)
  })

  it('builds a FireFly-compatible filter over datatype fields, comparing created as an instant', () => {
    const f = filterSql(parseFilter({ name: 'widget', version: ['1.0', '2.0'], created: '>2024-01-01T00:00:00.5Z' }), DATATYPE_FIELDS)!
    expect(f.sql).to.contain('name = ?')
    expect(f.params).to.deep.equal(['widget', '1.0', '2.0', '2024-01-01T00:00:00.500000000Z'])
    expect(problemOf(() => filterSql(parseFilter({ hash: 'x' }), DATATYPE_FIELDS))).to.match(/^INVALID_FILTER/)
  })
})

describe('datatypes: definition, lookup and validation over a database', () => {
  let dir: string
  let db: Database
  let identities: IdentitiesRepo
  let datatypes: DatatypesRepo

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-dt-'))
    ;({ db, identities, datatypes } = await openRepos(dir))
    await registerOrg(db, identities, 'orgA', KEY_A)
    pendingClaims = new Set()
  })
  afterEach(async () => {
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** A definition message as a member receives it, with its one data item. */
  function definition(opts: { ns?: string; name?: string; version?: string; schema?: string; author?: string; key?: string; topics?: string[]; id?: string; raw?: string } = {}) {
    const ns = opts.ns ?? 'default'
    const valueRaw =
      opts.raw ??
      datatypeDefinitionValue({ id: (opts.id ?? newId<DatatypeId>()) as DatatypeId, namespace: ns, name: opts.name ?? 'widget', version: opts.version ?? '1.0', value: opts.schema ?? WIDGET })
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: SYSTEM_NAMESPACE, hash: dataHash({ valueRaw }), created: now(), value: valueRaw }
    const header: Header = {
      id: newId<MessageId>(),
      type: 'definition',
      txtype: 'batch_pin',
      author: opts.author ?? ORG_A,
      key: opts.key ?? KEY_A,
      created: now(),
      namespace: SYSTEM_NAMESPACE,
      topics: opts.topics ?? [`svc_ns_${ns}`],
      tag: TAG_DEFINE_DATATYPE,
      datahash: dataRefsHash([{ id: d.id, hash: d.hash }]),
    }
    const message: Message = { header, hash: messageHash(header), state: 'pending', data: [{ id: d.id, hash: d.hash }] }
    return { message, data: [d], valueRaw }
  }

  /** Stands for the definitions' places in chain order. */
  let pinSeq = 0
  /** DIDs whose claim is ordered before the definition but not applied yet. */
  let pendingClaims: Set<string>

  async function handle(def: ReturnType<typeof definition>, signer = KEY_A) {
    const handler = datatypeDefinitionHandler({ datatypes, identities, claimPending: (_tx, did) => pendingClaims.has(did) })
    return db.transaction((tx) => handler.handle(tx, def.message, def.data, signer, ++pinSeq))
  }

  it('confirms a definition: stores the datatype under the id the definition chose, and says datatype_confirmed', async () => {
    const id = newId<DatatypeId>()
    const def = definition({ id })
    const out = await handle(def)
    expect(out).to.deep.equal({ kind: 'confirm', events: [{ type: 'datatype_confirmed', namespace: 'default', reference: id, topic: 'svc_ns_default' }] })
    const dt = datatypes.byNameVersion('default', 'widget', '1.0')!
    expect(dt).to.deep.include({ id, message: def.message.header.id, validator: 'json', namespace: 'default', name: 'widget', version: '1.0', hash: sha256Hex(WIDGET), value: WIDGET })
    expect(dt.id).to.not.equal(def.message.header.id)
    expect(dt.id).to.not.equal(def.data[0]!.id)
    expect(datatypes.byId(id)).to.deep.equal(dt)
    expect(datatypes.byNameVersion('other', 'widget', '1.0'), 'namespaces are apart').to.equal(undefined)
  })

  it('rejects a later definition of the same name and version, naming the earlier message', async () => {
    const first = definition()
    await handle(first)
    const second = definition({ schema: '{"type":"string"}' })
    const out = await handle(second)
    expect(out.kind).to.equal('reject')
    expect((out as { reason: string }).reason).to.contain(first.message.header.id)
    expect(datatypes.byNameVersion('default', 'widget', '1.0')!.message).to.equal(first.message.header.id)
    // Another version, or the same in another namespace, is a different datatype.
    expect((await handle(definition({ version: '1.1' }))).kind).to.equal('confirm')
    expect((await handle(definition({ ns: 'other' }))).kind).to.equal('confirm')
  })

  it('rejects a reused datatype id', async () => {
    const id = newId<DatatypeId>()
    await handle(definition({ id }))
    const out = await handle(definition({ id, name: 'gadget' }))
    expect((out as { reason: string }).reason).to.contain('already used')
  })

  it('waits while the signer is unknown and its org claim was ordered earlier but is not applied yet', async () => {
    pendingClaims.add('did:firefly:org/orgC')
    const out = await handle(definition({ author: 'did:firefly:org/orgC', key: KEY_B }), KEY_B)
    expect(out.kind).to.equal('wait')
    expect(datatypes.list('default', { limit: 10, skip: 0 })).to.deep.equal([])
  })

  it('rejects a definition signed by a stranger with no claim ordered before it (it must not hold the topic)', async () => {
    const out = await handle(definition({ author: 'did:firefly:org/orgC', key: KEY_B }), KEY_B)
    expect(out.kind).to.equal('reject')
    expect((out as { reason: string }).reason).to.contain('not a registered org')
  })

  it('rejects an author that does not own the signing key', async () => {
    await registerOrg(db, identities, 'orgB', KEY_B)
    const out = await handle(definition({ author: ORG_A, key: KEY_B }), KEY_B)
    expect(out.kind).to.equal('reject')
    expect((out as { reason: string }).reason).to.contain(`does not own key ${KEY_B}`)
  })

  it('rejects a definition not ordered on its namespace\'s definition topic', async () => {
    for (const topics of [['svc_ns_other'], ['default'], ['svc_ns_default', 'x']]) {
      const out = await handle(definition({ topics }))
      expect(out.kind, JSON.stringify(topics)).to.equal('reject')
      expect((out as { reason: string }).reason).to.contain('svc_ns_default')
    }
  })

  it('rejects malformed definitions: bad value, version, name, schema or hash', async () => {
    const cases: [string, string][] = [
      ['"not an object"', 'not an object'],
      ['{"id":"x","namespace":"default","name":"w","version":"1","value":{}}', 'UUID'],
      [`{"id":"${newId()}","namespace":"default","name":"w","version":"v1","value":{}}`, 'version'],
      [`{"id":"${newId()}","namespace":"default","name":"-w","version":"1","value":{}}`, 'name'],
      [`{"id":"${newId()}","namespace":"default","name":"w","version":"1","value":{"type":"nope"}}`, 'JSON Schema'],
      [`{"id":"${newId()}","namespace":"default","name":"w","version":"1","value":[]}`, 'not an object'],
      [`{"id":"${newId()}","validator":"none","namespace":"default","name":"w","version":"1","value":{}}`, 'validator'],
      [`{"id":"${newId()}","namespace":"default","name":"w","version":"1","hash":"${'0'.repeat(64)}","value":{}}`, 'hash'],
      ['{"id":', 'its data value is not JSON'],
      ['{"namespace":"default","name":"w","version":"1","value":{}}', 'id null is not a lowercase UUID'],
      [`{"id":"${newId().toUpperCase()}","namespace":"default","name":"w","version":"1","value":{}}`, 'is not a lowercase UUID'],
      [`{"id":7,"namespace":"default","name":"w","version":"1","value":{}}`, 'id null is not a lowercase UUID'],
      [`{"id":"${newId()}","namespace":"no spaces","name":"w","version":"1","value":{}}`, 'namespace "no spaces" is not a valid namespace name'],
      [`{"id":"${newId()}","name":"w","version":"1","value":{}}`, 'namespace "" is not a valid namespace name'],
      [`{"id":"${newId()}","namespace":"default","name":"w","value":{}}`, 'version'],
      [`{"id":"${newId()}","namespace":"default","version":"1","value":{}}`, 'name'],
      [`{"id":"${newId()}","namespace":"default","name":"w","version":"1"}`, 'its value (the JSON Schema) is not an object'],
      [`{"id":"${newId()}","namespace":"default","name":"w","version":"1","hash":42,"value":{}}`, 'its hash is not a string'],
      [`{"id":"${newId()}","validator":7,"namespace":"default","name":"w","version":"1","value":{}}`, 'validator 7 is not json'],
    ]
    for (const [raw, why] of cases) {
      const out = await handle(definition({ raw }))
      expect(out.kind, raw).to.equal('reject')
      expect((out as { reason: string }).reason, raw).to.contain(why)
    }
    expect(datatypes.list('default', { limit: 10, skip: 0 })).to.deep.equal([])
  })

  it('accepts a definition whose validator and hash are null, as an absent one', async () => {
    const id = newId<DatatypeId>()
    const out = await handle(definition({ raw: `{"id":"${id}","validator":null,"namespace":"default","name":"w","version":"1","hash":null,"value":{}}`, name: 'w' }))
    expect(out.kind).to.equal('confirm')
    expect(datatypes.byId(id)).to.deep.include({ name: 'w', version: '1', hash: sha256Hex('{}') })
  })

  it('rejects a definition that does not carry exactly one data value', async () => {
    const def = definition()
    for (const data of [[], [def.data[0]!, def.data[0]!], [{ ...def.data[0]!, value: null }]]) {
      const out = await handle({ ...def, data })
      expect(out, String(data.length)).to.deep.equal({ kind: 'reject', reason: 'datatype definition: it must carry exactly one data value' })
    }
    expect(datatypes.list('default', { limit: 10, skip: 0 })).to.deep.equal([])
  })

  it('rejects a definition sent in an application namespace: only the system namespace defines datatypes', async () => {
    const def = definition()
    const out = await handle({ ...def, message: { ...def.message, header: { ...def.message.header, namespace: 'default' } } })
    expect(out).to.deep.equal({ kind: 'reject', reason: 'datatype definition: sent in namespace default, not svc_system' })
  })

  it('rejects a definition whose datatype id is the id of its own message or data item', async () => {
    const def = definition()
    for (const taken of [def.message.header.id, def.data[0]!.id]) {
      const raw = datatypeDefinitionValue({ id: taken as unknown as DatatypeId, namespace: 'default', name: 'widget', version: '1.0', value: WIDGET })
      const out = await handle({ ...definition({ raw }), message: { ...def.message } })
      expect((out as { reason: string }).reason).to.contain('is the id of the message or its data')
    }
    expect(datatypes.list('default', { limit: 10, skip: 0 })).to.deep.equal([])
  })

  it('rejects a definition ordered before its signer\'s registration, whichever payload came first here', async () => {
    await db.transaction((tx) => {
      const id = newId<IdentityId>()
      identities.insert(tx, { id, did: 'did:firefly:org/orgLate', type: 'org', namespace: SYSTEM_NAMESPACE, name: 'orgLate', messages: { claim: newId<MessageId>() }, created: now(), registeredAfter: pinSeq + 5 })
      identities.insertVerifier(tx, { identity: id, type: 'ethereum_address', value: KEY_B, created: now() })
    })
    const out = await handle(definition({ author: 'did:firefly:org/orgLate', key: KEY_B }), KEY_B)
    expect(out).to.deep.equal({ kind: 'reject', reason: `datatype definition: signer ${KEY_B} was registered to did:firefly:org/orgLate only after this definition, in the chain's order` })
  })

  it('looks datatypes up (cached) and validates data against them with readable errors', async () => {
    await handle(definition())
    const lookup = datatypeLookup(datatypes, 2)
    const check = lookup('default', 'widget', '1.0')!.check
    expect(check('{"name":"w","size":3}')).to.equal(undefined)
    expect(check('{"size":0}')).to.contain("(root) must have required property 'name'").and.to.contain('/size must be >= 1')
    expect(lookup('default', 'widget', '1.0')!.check, 'compiled once').to.equal(check)
    expect(lookup('default', 'widget', '9.9')).to.equal(undefined)
    expect(lookup('other', 'widget', '1.0')).to.equal(undefined)

    const validator = new DataValidatorImpl(lookup)
    const item = (value: string, version = '1.0'): Data => ({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), datatype: { name: 'widget', version }, value })
    validator.validate('default', item('{"name":"ok"}'))
    expect(problemOf(() => validator.validate('default', item('{"name":1}')))).to.match(/^SCHEMA_VALIDATION_FAILED: .*widget\/1\.0.*\/name must be string/)
    expect(problemOf(() => validator.validate('default', item('{"name":"x"}', '2.0')))).to.match(/^UNKNOWN_DATATYPE: .*widget\/2\.0/)
  })

  it('lists newest first with filters and paging', async () => {
    for (const v of ['1', '2', '3']) await handle(definition({ version: v }))
    await handle(definition({ name: 'gadget', version: '1' }))
    const list = (q: Record<string, string>, limit = 10, skip = 0) => {
      const filter = parseFilter(q)
      return datatypes.list('default', { ...(filter ? { filter } : {}), limit, skip }).map((d) => `${d.name}/${d.version}`)
    }
    expect(list({})).to.deep.equal(['gadget/1', 'widget/3', 'widget/2', 'widget/1'])
    expect(list({ name: 'widget' })).to.deep.equal(['widget/3', 'widget/2', 'widget/1'])
    expect(list({ name: 'widget', version: '2' })).to.deep.equal(['widget/2'])
    expect(list({ version: '>=2' })).to.deep.equal(['widget/3', 'widget/2'])
    expect(list({ name: ':^WID' })).to.have.length(3)
    expect(list({}, 2, 1)).to.deep.equal(['widget/3', 'widget/2'])
    const created = datatypes.byNameVersion('default', 'widget', '2')!.created
    expect(list({ created: `>=${created}` })).to.deep.equal(['gadget/1', 'widget/3', 'widget/2'])
  })
})

describe('datatypes: through the aggregator, in chain order', () => {
  let dir: string
  let db: Database
  let repos: Repos
  let datatypes: DatatypesRepo
  let agg: Aggregator

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-dt-agg-'))
    repos = await openRepos(dir)
    ;({ db, datatypes } = repos)
    agg = new Aggregator({
      ...repos,
      validator: new DataValidatorImpl(datatypeLookup(datatypes)),
      definitions: [datatypeDefinitionHandler({ datatypes, identities: repos.identities, claimPending: (tx, did, seq) => claimPendingBefore(repos.pins, tx, did, seq) })],
      log: () => {},
      onOutcome: () => {},
    })
    await registerOrg(db, repos.identities, 'orgA', KEY_A)
  })
  afterEach(async () => {
    await agg.whenIdle()
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  type Item = { type: 'definition'; valueRaw: string; topic: string } | { type: 'broadcast'; valueRaw: string; topic: string; datatype?: { name: string; version: string } }

  /** One received batch of messages from orgA, stored and pinned as the fetcher and the chain would. */
  async function batchOf(items: Item[]): Promise<Message[]> {
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const data: Data[] = []
    const messages = items.map((it) => {
      const ns = it.type === 'definition' ? SYSTEM_NAMESPACE : 'default'
      const d: Data = { id: newId<DataId>(), validator: 'json', namespace: ns, hash: dataHash({ valueRaw: it.valueRaw }), created: now(), value: it.valueRaw, ...(it.type === 'broadcast' && it.datatype ? { datatype: it.datatype } : {}) }
      data.push(d)
      const header: Header = {
        id: newId<MessageId>(),
        type: it.type,
        txtype: 'batch_pin',
        author: ORG_A,
        key: KEY_A,
        created: now(),
        namespace: ns,
        topics: [it.topic],
        ...(it.type === 'definition' ? { tag: TAG_DEFINE_DATATYPE } : {}),
        datahash: dataRefsHash([{ id: d.id, hash: d.hash }]),
      }
      return { header, hash: messageHash(header), state: 'pending' as const, data: [{ id: d.id, hash: d.hash }] }
    })
    const { manifest, hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data })), data })
    await db.transaction((tx) => {
      repos.batches.insert(tx, { id, type: 'broadcast', namespace: 'default', author: ORG_A, key: KEY_A, created: now(), hash: hash as Hash, manifest, txId, state: 'received', local: false })
      for (const d of data) repos.data.insert(tx, d, true)
      for (const m of messages) repos.messages.insert(tx, m, false)
      messages.forEach((m, i) => repos.pins.insert(tx, { batchId: id, batchHash: hash as Hash, index: i, hash: broadcastContext(m.header.topics[0]!), masked: false, signer: KEY_A, eventId: newId() }))
    })
    return messages
  }

  const defineWidget = (schema = WIDGET): Item => ({
    type: 'definition',
    topic: 'svc_ns_default',
    valueRaw: datatypeDefinitionValue({ id: newId<DatatypeId>(), namespace: 'default', name: 'widget', version: '1.0', value: schema }),
  })
  const useWidget = (valueRaw: string): Item => ({ type: 'broadcast', topic: 't1', valueRaw, datatype: { name: 'widget', version: '1.0' } })
  const state = (m: Message) => repos.messages.get(m.header.id)!.state

  it('a definition and data using it in the same batch: the datatype is usable in the same pass', async () => {
    const [def, good, bad] = await batchOf([defineWidget(), useWidget('{"name":"ok"}'), useWidget('{"name":5}')])
    agg.start()
    await agg.whenIdle()
    expect(state(def!)).to.equal('confirmed')
    expect(state(good!)).to.equal('confirmed')
    expect(state(bad!)).to.equal('rejected')
    expect(repos.messages.get(bad!.header.id)!.rejectReason).to.contain('/name must be string')
    const ev = repos.events.list({ namespace: 'default', type: 'datatype_confirmed', limit: 10, skip: 0 })
    expect(ev.map((e) => e.reference)).to.deep.equal([datatypes.byNameVersion('default', 'widget', '1.0')!.id])
  })

  it('the first definition ordered wins; the second is rejected with message_rejected in the system namespace', async () => {
    const [first] = await batchOf([defineWidget()])
    const [second] = await batchOf([defineWidget('{"type":"string"}')])
    agg.start()
    await agg.whenIdle()
    expect(state(first!)).to.equal('confirmed')
    expect(state(second!)).to.equal('rejected')
    expect(datatypes.byNameVersion('default', 'widget', '1.0')!.message).to.equal(first!.header.id)
    const rejected = repos.events.list({ namespace: SYSTEM_NAMESPACE, type: 'message_rejected', limit: 10, skip: 0 })
    expect(rejected.map((e) => e.reference)).to.deep.equal([second!.header.id])
  })
})
