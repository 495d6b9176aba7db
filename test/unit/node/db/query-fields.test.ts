import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ParsedUrlQuery } from 'node:querystring'
import { parseFilter } from '../../../../node/api/filters.js'
import { parseQuery } from '../../../../node/api/query.js'
import { filterSql } from '../../../../node/db/filter-sql.js'
import { BATCH_FIELDS, BLOCKCHAIN_EVENT_FIELDS, DATA_FIELDS, IDENTITY_FIELDS, type QueryFields } from '../../../../node/db/query-fields.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { newId, type Address, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { formatTimestamp } from '../../../../node/core/time.js'
import type { BatchRecord, Data, Filter, Identity } from '../../../../node/model/index.js'
import { forEachEngine, openRepos, type Repos } from '../../../support/repos.js'

/**
 * FireFly's filters on data, batches, identities and blockchain events: each collection's fields, from the query
 * string through the SQL its repository runs, over a few real rows in sql.js.
 */
const NS = 'default'
const T0 = Date.parse('2024-01-02T03:04:05Z')
const at = (secs: number) => formatTimestamp(T0 + secs * 1000)
const iso = (secs: number) => new Date(T0 + secs * 1000).toISOString()
const unix = (secs: number) => String(Math.floor(T0 / 1000) + secs)
const hex = (byte: string) => byte.repeat(32) as Hash
const ORG_A = 'did:firefly:org/orgA'
const ORG_B = 'did:firefly:org/orgB'

interface Case {
  name: string
  /** Called once the rows exist, so a case can name their ids and sequences. */
  query: () => ParsedUrlQuery
  expected: string[]
}

/** Names of the rows a list answered, in its order. */
function namesOf(ids: Record<string, string>, listed: readonly string[]): string[] {
  const byId = new Map(Object.entries(ids).map(([name, id]) => [id, name]))
  return listed.map((id) => byId.get(id) ?? `unknown ${id}`)
}

function refusal(fn: () => unknown): ParleyError {
  try {
    fn()
  } catch (e) {
    expect(e).to.be.instanceOf(ParleyError)
    return e as ParleyError
  }
  return expect.fail('expected a refusal')
}

/** Every field a collection offers must be run over real rows by at least one case. */
function coversEveryField(fields: QueryFields, cases: readonly Case[]): void {
  it('every field it offers is run by a case above', () => {
    const used = new Set(cases.flatMap((c) => Object.keys(c.query()).map((k) => k.toLowerCase())))
    expect(Object.keys(fields).filter((f) => !used.has(f))).to.deep.equal([])
  })
}

forEachEngine('collection filters over data, batches, identities and blockchain events', (engine) => {
  let dir: string
  let repos: Repos

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-filters-collections-'))
    repos = await openRepos(dir, engine)
  })
  after(async () => {
    await repos.db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  describe('data', () => {
    const ids: Record<string, DataId> = {}
    const seqs: Record<string, number> = {}
    const rows: [string, Omit<Data, 'id' | 'namespace' | 'created'>, number][] = [
      ['widget1', { validator: 'json', hash: hex('a1'), datatype: { name: 'widget', version: '1.0.0' }, value: '{"name":"Café","total":12}' }, 0],
      ['widget2', { validator: 'json', hash: hex('a2'), datatype: { name: 'widget', version: '2.0.0' }, value: '{"total":7}' }, 10],
      // Stored as Go writes it, `...:25.25Z`: compared as text it would sort after `...:25.250000001Z`.
      ['plain', { validator: 'none', hash: hex('a3'), value: '"100%_done"' }, 20.25],
      ['report', { validator: 'none', hash: hex('a4'), value: null, blob: { hash: hex('b1'), size: 1024, name: 'docs/report.pdf', public: 'QmReport' } }, 30],
      ['photo', { validator: 'none', hash: hex('a5'), value: null, blob: { hash: hex('b2'), size: 10, name: 'photo.PNG' } }, 40],
    ]

    before(async () => {
      await repos.db.transaction((tx) => {
        for (const [name, d, secs] of rows) {
          ids[name] = newId<DataId>()
          repos.data.insert(tx, { ...d, id: ids[name], namespace: NS, created: at(secs) }, true)
        }
        // Another namespace's data must never show, whatever the filter.
        repos.data.insert(tx, { id: newId<DataId>(), namespace: 'other', validator: 'json', hash: hex('a1'), created: at(0), value: '{"name":"Café","total":12}' }, true)
        // The value published on its own (`data/{id}/value/publish`).
        repos.data.setPublic(tx, { id: ids.widget2!, hash: hex('a2') }, 'QmWidget2')
      })
      for (const [name, id] of Object.entries(ids)) seqs[name] = repos.db.get<{ seq: number }>('SELECT seq FROM data WHERE id = ?', [id])!.seq
    })

    const listed = (query: ParsedUrlQuery, page = { limit: 100, skip: 0 }): string[] => {
      const filter = parseFilter(query)
      return namesOf(
        ids,
        repos.data.list(NS, { ...(filter ? { filter } : {}), ...page }).map((d) => d.id),
      )
    }

    const cases: Case[] = [
      { name: 'id', query: () => ({ id: ids.plain! }), expected: ['plain'] },
      { name: 'validator', query: () => ({ validator: 'none' }), expected: ['photo', 'report', 'plain'] },
      { name: 'datatype.name', query: () => ({ 'datatype.name': 'widget' }), expected: ['widget2', 'widget1'] },
      { name: 'datatype.version, greater than as text', query: () => ({ 'datatype.version': '>1.5' }), expected: ['widget2'] },
      { name: 'hash', query: () => ({ hash: hex('a3') }), expected: ['plain'] },
      { name: 'blob.hash', query: () => ({ 'blob.hash': hex('b2') }), expected: ['photo'] },
      { name: 'blob.public, negated: only items that have one', query: () => ({ 'blob.public': '!QmOther' }), expected: ['report'] },
      { name: "public, the value's own reference", query: () => ({ public: 'QmWidget2' }), expected: ['widget2'] },
      { name: 'blob.name, case-insensitive ends with', query: () => ({ 'blob.name': ':$.png' }), expected: ['photo'] },
      { name: 'blob.size is a number', query: () => ({ 'blob.size': '>=100' }), expected: ['report'] },
      { name: 'blob.size compares as a number, not as text', query: () => ({ 'blob.size': '<9' }), expected: [] },
      { name: 'created from, in RFC3339', query: () => ({ created: `>=${iso(10)}` }), expected: ['photo', 'report', 'plain', 'widget2'] },
      { name: 'created before, in Unix seconds', query: () => ({ created: `<${unix(20)}` }), expected: ['widget2', 'widget1'] },
      { name: 'created compares a trimmed fraction as the instant', query: () => ({ created: '<=2024-01-02T03:04:25.250000001Z' }), expected: ['plain', 'widget2', 'widget1'] },
      { name: 'created equal to a trimmed fraction', query: () => ({ created: '2024-01-02T03:04:25.25Z' }), expected: ['plain'] },
      { name: 'value compares the stored JSON text', query: () => ({ value: '{"total":7}' }), expected: ['widget2'] },
      { name: 'value contains a key, non-ASCII and case-insensitive', query: () => ({ value: ':@"name":"café"' }), expected: ['widget1'] },
      { name: 'value contains % and _ literally', query: () => ({ value: '@0%_' }), expected: ['plain'] },
      { name: 'sequence', query: () => ({ sequence: `>${seqs.report!}` }), expected: ['photo'] },
      { name: 'fields AND together', query: () => ({ validator: 'json', 'datatype.version': '^1.' }), expected: ['widget1'] },
      { name: 'a repeated field ORs', query: () => ({ hash: [hex('a1'), hex('a5')] }), expected: ['photo', 'widget1'] },
    ]
    for (const c of cases) {
      it(c.name, () => {
        expect(listed(c.query())).to.deep.equal(c.expected)
      })
    }
    coversEveryField(DATA_FIELDS, cases)

    it('the natural order (newest first) and paging are unchanged, with or without a filter', () => {
      expect(listed({})).to.deep.equal(['photo', 'report', 'plain', 'widget2', 'widget1'])
      expect(listed({ validator: 'none' }, { limit: 2, skip: 1 })).to.deep.equal(['report', 'plain'])
    })

    it('the bytes a page would hold are measured for the same filtered page', () => {
      const filter = parseFilter({ validator: 'json' })!
      expect(repos.data.listValueBytes(NS, { filter, limit: 100, skip: 0 })).to.deep.equal({ items: 2, bytes: Buffer.byteLength('{"name":"Café","total":12}') + Buffer.byteLength('{"total":7}') })
      expect(repos.data.listValueBytes(NS, { filter, limit: 1, skip: 1 })).to.deep.equal({ items: 1, bytes: Buffer.byteLength('{"name":"Café","total":12}') })
      expect(repos.data.listValueBytes(NS, { filter: parseFilter({ 'blob.size': '>0' })!, limit: 100, skip: 0 })).to.deep.equal({ items: 2, bytes: 0 })
      expect(() => repos.data.listValueBytes(NS, { filter: parseFilter({ 'blob.path': 'x' })!, limit: 1, skip: 0 })).to.throw(ParleyError, /unknown filter field "blob\.path"/)
    })

    it('a FireFly field this node does not keep is refused, naming it and what it takes', () => {
      for (const field of ['blob.path']) {
        const e = refusal(() => repos.data.list(NS, { filter: parseFilter({ [field]: 'x' })!, limit: 1, skip: 0 }))
        expect(e.code).to.equal('INVALID_FILTER')
        expect(e.message).to.equal(`unknown filter field ${JSON.stringify(field)}; filterable: ${Object.keys(DATA_FIELDS).join(', ')}`)
      }
      expect(refusal(() => repos.data.list(NS, { filter: parseFilter({ 'blob.size': 'big' })!, limit: 1, skip: 0 })).message).to.match(/^blob\.size needs a whole number/)
    })
  })

  describe('batches', () => {
    const ids: Record<string, BatchId> = {}
    const txs: Record<string, TxId> = {}
    const base = (name: string, secs: number): BatchRecord => {
      ids[name] = newId<BatchId>()
      txs[name] = newId<TxId>()
      return { id: ids[name], type: 'broadcast', namespace: NS, author: ORG_A, key: '0x' + 'aa'.repeat(20), created: at(secs), hash: hex('c' + name.length), manifest: '{}', txId: txs[name], state: 'pinned', local: true }
    }
    const NODE_A = newId<IdentityId>()

    before(async () => {
      await repos.db.transaction((tx) => {
        repos.batches.insert(tx, { ...base('b1', 0), node: NODE_A, payloadRef: 'QmPayloadOne', hash: hex('c1') })
        repos.batches.insert(tx, { ...base('b2', 10), type: 'private', author: ORG_B, key: '0x' + 'bb'.repeat(20), group: hex('9a'), hash: hex('c2'), state: 'received', local: false })
        repos.batches.insert(tx, { ...base('b3', 20), payloadRef: 'QmPayloadThree', hash: hex('c3') })
        repos.batches.insert(tx, { ...base('elsewhere', 5), namespace: 'other', hash: hex('c4') })
      })
    })

    const listed = (query: ParsedUrlQuery): string[] => {
      const filter = parseFilter(query)
      return namesOf(
        ids,
        repos.batches.list(NS, { ...(filter ? { filter } : {}), limit: 100, skip: 0 }).map((b) => b.id),
      )
    }

    const cases: Case[] = [
      { name: 'id', query: () => ({ id: ids.b2! }), expected: ['b2'] },
      { name: 'type', query: () => ({ type: 'private' }), expected: ['b2'] },
      { name: 'namespace (the list is one namespace already)', query: () => ({ namespace: 'other' }), expected: [] },
      { name: 'node', query: () => ({ node: NODE_A }), expected: ['b1'] },
      { name: 'author, negated', query: () => ({ author: `!${ORG_A}` }), expected: ['b2'] },
      { name: 'key, case-insensitive', query: () => ({ key: ':0X' + 'BB'.repeat(20) }), expected: ['b2'] },
      { name: 'group', query: () => ({ group: hex('9a') }), expected: ['b2'] },
      { name: 'hash', query: () => ({ hash: hex('c3') }), expected: ['b3'] },
      { name: 'payloadref starts with', query: () => ({ payloadref: '^QmPayload' }), expected: ['b3', 'b1'] },
      { name: 'created from, in Unix milliseconds', query: () => ({ created: `>${T0 + 5000}` }), expected: ['b3', 'b2'] },
      { name: 'tx.type: every batch is pinned by a batch_pin transaction', query: () => ({ 'tx.type': 'batch_pin' }), expected: ['b3', 'b2', 'b1'] },
      { name: 'tx.type, another type', query: () => ({ 'TX.TYPE': 'none' }), expected: [] },
      { name: 'tx.id', query: () => ({ 'tx.id': txs.b3! }), expected: ['b3'] },
    ]
    for (const c of cases) {
      it(c.name, () => {
        expect(listed(c.query())).to.deep.equal(c.expected)
      })
    }
    coversEveryField(BATCH_FIELDS, cases)

    it('the natural order (newest first) is unchanged', () => {
      expect(listed({})).to.deep.equal(['b3', 'b2', 'b1'])
    })

    it('confirmed, which no batch records here, is refused naming the field', () => {
      const e = refusal(() => repos.batches.list(NS, { filter: parseFilter({ confirmed: '>0' })!, limit: 1, skip: 0 }))
      expect(e.message).to.equal(`unknown filter field "confirmed"; filterable: ${Object.keys(BATCH_FIELDS).join(', ')}`)
    })
  })

  describe('identities (network/organizations, network/nodes)', () => {
    const ids: Record<string, IdentityId> = {}
    const claims: Record<string, MessageId> = {}
    const identity = (name: string, type: 'org' | 'node', secs: number, extra: Partial<Identity> = {}): Identity => {
      ids[name] = newId<IdentityId>()
      claims[name] = newId<MessageId>()
      return { id: ids[name], did: `did:firefly:${type}/${name}`, type, namespace: 'svc_system', name, messages: { claim: claims[name] }, created: at(secs), ...extra }
    }

    before(async () => {
      await repos.db.transaction((tx) => {
        repos.identities.insert(tx, identity('orgA', 'org', 0))
        repos.identities.insert(tx, identity('orgB', 'org', 10, { description: 'The B Company' }))
        repos.identities.insert(tx, identity('orgC', 'org', 20, { description: 'C' }))
        repos.identities.insert(tx, identity('nodeA', 'node', 30, { parent: ids.orgA!, profile: { id: 'peerA', endpoint: 'https://a:3001', cert: 'x' } }))
        repos.identities.insert(tx, identity('nodeB', 'node', 40, { parent: ids.orgB!, profile: { id: 'peerB', endpoint: 'https://b:3001', cert: 'y' } }))
        // No write path sets `updated` yet; the column is there, so its filter is too.
        tx.run('UPDATE identities SET updated = ? WHERE id = ?', [at(100), ids.orgB!])
      })
    })

    const listed = (type: 'org' | 'node', query: ParsedUrlQuery): string[] => {
      const filter = parseFilter(query)
      return namesOf(
        ids,
        repos.identities.list(type, { ...(filter ? { filter } : {}), limit: 100, skip: 0 }).map((i) => i.id),
      )
    }

    const cases: (Case & { type: 'org' | 'node' })[] = [
      { name: 'id', type: 'org', query: () => ({ id: ids.orgC! }), expected: ['orgC'] },
      { name: 'did', type: 'org', query: () => ({ did: ORG_B }), expected: ['orgB'] },
      { name: 'parent', type: 'node', query: () => ({ parent: ids.orgB! }), expected: ['nodeB'] },
      { name: 'messages.claim', type: 'org', query: () => ({ 'messages.claim': claims.orgA! }), expected: ['orgA'] },
      { name: 'type within a list of one type', type: 'node', query: () => ({ type: 'org' }), expected: [] },
      { name: 'name, case-insensitive starts with', type: 'org', query: () => ({ name: ':^ORG' }), expected: ['orgA', 'orgB', 'orgC'] },
      { name: 'description contains', type: 'org', query: () => ({ description: '@Company' }), expected: ['orgB'] },
      { name: 'profile compares its stored JSON text', type: 'node', query: () => ({ profile: '@"endpoint":"https://a:3001"' }), expected: ['nodeA'] },
      { name: 'created after, in RFC3339', type: 'org', query: () => ({ created: `>${iso(0)}` }), expected: ['orgB', 'orgC'] },
      { name: 'updated: an identity never updated does not match', type: 'org', query: () => ({ updated: `>=${unix(0)}` }), expected: ['orgB'] },
    ]
    for (const c of cases) {
      it(`${c.type}: ${c.name}`, () => {
        expect(listed(c.type, c.query())).to.deep.equal(c.expected)
      })
    }
    coversEveryField(IDENTITY_FIELDS, cases)

    it('the natural order (oldest first) is unchanged', () => {
      expect(listed('org', {})).to.deep.equal(['orgA', 'orgB', 'orgC'])
      expect(listed('node', {})).to.deep.equal(['nodeA', 'nodeB'])
    })

    it('a FireFly field this node does not keep is refused naming it', () => {
      expect(refusal(() => repos.identities.list('org', { filter: parseFilter({ 'messages.update': 'x' })!, limit: 1, skip: 0 })).message).to.match(/^unknown filter field "messages\.update"; filterable: id, did, /)
    })
  })

  describe('blockchain events', () => {
    const ids: Record<string, string> = {}
    const batches: Record<string, BatchId> = {}
    const txs: Record<string, TxId> = {}
    let seqB = 0

    before(async () => {
      const pin = (name: string, block: number, secs: number) => {
        const batchId = (batches[name] = newId<BatchId>())
        const txId = (txs[name] = newId<TxId>())
        return repos.db.transaction((tx) => {
          ids[name] = repos.blockchainEvents.insert(
            tx,
            {
              blockNumber: block,
              txIndex: 0,
              logIndex: 1,
              protocolId: `${String(block).padStart(12, '0')}/000000/000001`,
              txHash: '0x' + String(block).repeat(64).slice(0, 64),
              author: ('0x' + 'aa'.repeat(20)) as Address,
              timestamp: Math.floor(T0 / 1000) + secs,
              action: 'firefly:batch_pin',
              txId,
              batchId,
              batchHash: hex('dd'),
              payloadRef: '',
              contexts: [],
            },
            at(secs),
          )!
        })
      }
      await pin('e1', 7, 0)
      await pin('e2', 8, 10)
      await pin('e3', 9, 20)
      seqB = repos.db.get<{ seq: number }>('SELECT seq FROM blockchain_events WHERE id = ?', [ids.e2!])!.seq
    })

    const listed = (query: ParsedUrlQuery, batchId?: string): string[] => {
      const filter = parseFilter(query, ['batch'])
      return namesOf(
        ids,
        repos.blockchainEvents.list({ ...(filter ? { filter } : {}), ...(batchId ? { batchId } : {}), limit: 100, skip: 0 }).map((e) => e.id),
      )
    }

    const cases: Case[] = [
      { name: 'id', query: () => ({ id: ids.e1! }), expected: ['e1'] },
      { name: 'source: every event comes from ethereum', query: () => ({ source: 'ethereum' }), expected: ['e3', 'e2', 'e1'] },
      { name: 'name: every event is the contract\'s BatchPin', query: () => ({ name: ':batchpin' }), expected: ['e3', 'e2', 'e1'] },
      { name: 'name, another event', query: () => ({ name: 'Transfer' }), expected: [] },
      { name: 'protocolid range, as chain order', query: () => ({ protocolid: '>=000000000008' }), expected: ['e3', 'e2'] },
      { name: 'tx.type', query: () => ({ 'tx.type': '!batch_pin' }), expected: [] },
      { name: 'tx.id', query: () => ({ 'tx.id': txs.e3! }), expected: ['e3'] },
      { name: 'tx.blockchainid', query: () => ({ 'tx.blockchainid': '0x' + '8'.repeat(64) }), expected: ['e2'] },
      { name: 'timestamp: when this node received it, as the answer shows', query: () => ({ timestamp: `<${iso(15)}` }), expected: ['e2', 'e1'] },
      { name: 'sequence', query: () => ({ sequence: `>=${seqB}` }), expected: ['e3', 'e2'] },
    ]
    for (const c of cases) {
      it(c.name, () => {
        expect(listed(c.query())).to.deep.equal(c.expected)
      })
    }
    coversEveryField(BLOCKCHAIN_EVENT_FIELDS, cases)

    it('the route\'s own batch parameter narrows as before, and ANDs with a filter', () => {
      const q = parseQuery(`batch=${batches.e2!}&protocolid=%5E000000000008`)
      expect(parseFilter(q, ['batch'])).to.deep.equal([[{ field: 'protocolid', op: 'startswith', value: '000000000008', not: false, caseInsensitive: false }]])
      expect(listed(q, batches.e2)).to.deep.equal(['e2'])
      expect(listed({ protocolid: '^000000000007' }, batches.e2)).to.deep.equal([])
      expect(listed({}, batches.e3)).to.deep.equal(['e3'])
    })

    it('the natural order (newest first) is unchanged', () => {
      expect(listed({})).to.deep.equal(['e3', 'e2', 'e1'])
    })

    it('listener, namespace and created, which these events do not have, are refused naming the field', () => {
      for (const field of ['listener', 'namespace', 'created']) {
        const e = refusal(() => repos.blockchainEvents.list({ filter: parseFilter({ [field]: 'x' })!, limit: 1, skip: 0 }))
        expect(e.message).to.equal(`unknown filter field ${JSON.stringify(field)}; filterable: ${Object.keys(BLOCKCHAIN_EVENT_FIELDS).join(', ')}`)
      }
    })
  })

  it('each new collection\'s fields map to their columns (and constants) in SQL', () => {
    const one: [QueryFields, ParsedUrlQuery, string][] = [
      [DATA_FIELDS, { 'datatype.name': 'w', 'blob.size': '>1' }, 'datatype_name = ? AND blob_size > ?'],
      [BATCH_FIELDS, { payloadref: 'Qm', 'tx.id': 't', group: 'g' }, 'payload_ref = ? AND tx_id = ? AND grp = ?'],
      [IDENTITY_FIELDS, { 'messages.claim': 'm', parent: '!p' }, 'message_id = ? AND NOT (parent = ?)'],
      [BLOCKCHAIN_EVENT_FIELDS, { 'tx.type': ':Batch_Pin', protocolid: '<9' }, `LOWER('batch_pin') = ? AND protocol_id < ?`],
    ]
    for (const [fields, query, sql] of one) expect(filterSql(parseFilter(query) as Filter, fields)!.sql).to.equal(sql)
  })
})
