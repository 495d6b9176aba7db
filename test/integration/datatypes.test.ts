import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { waitFor } from '../../network/process.js'
import { sharedNetwork } from '../support/shared-network.js'
import { broadcast, get, messageReaching, nsBase, request, runId, sha256, type ApiEvent, type ApiMessage } from '../support/api.js'
import { uploadBlob } from '../support/upload.js'
import { chainOrder } from '../support/chain-order.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const HASH_RE = /^[0-9a-f]{64}$/

interface ApiDatatype {
  id: string
  message: string
  validator: string
  namespace: string
  name: string
  version: string
  hash: string
  created: string
  value: unknown
}

const WIDGET_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { name: { type: 'string' }, size: { type: 'integer', minimum: 1 } },
  required: ['name'],
}

describe('datatypes on a real 3-member network', function () {
  this.timeout(120_000)
  const t = sharedNetwork()
  const { members } = t
  const run = runId()

  const define = (m: MemberDescription, ns: string, body: unknown, opts: { confirm?: boolean; path?: string } = {}) =>
    request<ApiMessage>('POST', `${nsBase(m, ns)}/${opts.path ?? 'datatypes'}${opts.confirm ? '?confirm=true' : ''}`, body)

  const list = async (m: MemberDescription, ns: string, query = ''): Promise<ApiDatatype[]> => {
    const r = await get<ApiDatatype[]>(`${nsBase(m, ns)}/datatypes${query}`)
    if (r.status !== 200) throw new Error(`${m.org}: GET datatypes${query} answered ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }

  /** Polls a member until it holds the datatype; answers it. */
  async function datatypeOn(m: MemberDescription, ns: string, name: string, version: string): Promise<ApiDatatype> {
    let found: ApiDatatype | undefined
    await waitFor(`${m.org} to confirm datatype ${name}/${version} in ${ns}`, async () => {
      const r = await get<ApiDatatype>(`${nsBase(m, ns)}/datatypes/${name}/${version}`)
      found = r.status === 200 ? r.body : undefined
      return found !== undefined
    }, { timeoutMs: 30_000, intervalMs: 150 })
    return found!
  }

  /** Polls a member until the message has settled (confirmed or rejected) in its namespace; answers it. */
  const settledOn = (m: MemberDescription, ns: string, id: string): Promise<ApiMessage> => messageReaching(m, ns, id, ['confirmed', 'rejected'], 30_000)

  it('define: 202 with the definition message, then the same datatype on every member under its own id', async () => {
    const m = members[0]!
    const name = `widget-${run}`
    // Sent with spaces: the schema is stored and hashed as its compacted text.
    const body = `{"name": "${name}", "version": "1.0", "value": ${JSON.stringify(WIDGET_SCHEMA, null, 2)}}`
    const r = await request<ApiMessage>('POST', `${m.api}/api/v1/broadcast/datatype`, body)
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    const msg = r.body
    expect(msg.header.id).to.match(UUID_RE)
    expect(msg.header.type).to.equal('definition')
    expect(msg.header.namespace).to.equal('svc_system')
    expect(msg.header.tag).to.equal('svc_define_datatype')
    expect(msg.header.topic).to.deep.equal(['svc_ns_default'])
    expect(msg.header.topics).to.deep.equal(['svc_ns_default'])
    expect(msg.header.txtype).to.equal('batch_pin')
    expect(msg.header.author).to.equal(m.did)
    expect(msg.state).to.equal('ready')
    expect(msg.data).to.have.length(1)
    expect(msg.data[0]!.id).to.match(UUID_RE)
    expect(msg.data[0]!.hash).to.match(HASH_RE)

    // Not there before its confirmation: whenever the sender serves it, its definition is confirmed there.
    const listed = (await list(m, 'default', `?name=${name}`)).length
    const early = (await get(`${nsBase(m, 'default')}/datatypes/${name}/1.0`)).status
    const definition = (await get<ApiMessage>(`${nsBase(m, msg.header.namespace)}/messages/${msg.header.id}`)).body
    expect(early, 'served or not yet').to.be.oneOf([200, 404])
    if (listed > 0 || early === 200) expect(definition.state, 'a datatype appears only once its definition is confirmed').to.equal('confirmed')

    const seen: ApiDatatype[] = []
    for (const other of members) {
      const dt = await datatypeOn(other, 'default', name, '1.0')
      expect(dt, other.org).to.deep.include({ message: msg.header.id, validator: 'json', namespace: 'default', name, version: '1.0', value: WIDGET_SCHEMA })
      expect(dt.hash, 'sha256 of the compacted schema').to.equal(sha256(JSON.stringify(WIDGET_SCHEMA)))
      expect(dt.id).to.match(UUID_RE)
      expect(dt.created).to.be.a('string')
      const listed = await list(other, 'default', `?name=${name}`)
      expect(listed.map((d) => d.id)).to.deep.equal([dt.id])
      const events = await get<ApiEvent[]>(`${nsBase(other, 'default')}/events?type=datatype_confirmed&reference=${dt.id}`)
      expect(events.body.map((e) => e.topic), `${other.org}: datatype_confirmed`).to.deep.equal(['svc_ns_default'])
      const enriched = await get<(ApiEvent & { datatype?: ApiDatatype })[]>(`${nsBase(other, 'default')}/events?type=datatype_confirmed&reference=${dt.id}&fetchreferences=true`)
      expect(enriched.body[0]!.datatype?.id, `${other.org}: the event carries its datatype`).to.equal(dt.id)
      const def = await settledOn(other, 'svc_system', msg.header.id)
      expect(def.state, other.org).to.equal('confirmed')
      seen.push(dt)
    }
    const id = seen[0]!.id
    expect(seen.map((d) => d.id), 'every member stores it under the same id').to.deep.equal(members.map(() => id))
    expect(id).to.not.equal(msg.header.id)
    expect(id).to.not.equal(msg.data[0]!.id)

    // Defined again once confirmed: refused at once.
    const again = await define(members[1]!, 'default', { name, version: '1.0', value: { type: 'string' } })
    expect(again.status, JSON.stringify(again.body)).to.equal(409)
    expect((again.body as unknown as { error: string }).error).to.match(/^CONFLICT: /)
  })

  it('looks datatypes up by name and version, with filters and paging', async () => {
    const m = members[1]!
    const name = `gauge-${run}`
    for (const version of ['1.0', '2.0']) {
      const r = await define(m, 'default', { name, version, value: { type: 'number' } }, { confirm: true })
      expect(r.status, JSON.stringify(r.body)).to.equal(200)
      expect(r.body.state).to.equal('confirmed')
    }
    for (const other of members) await datatypeOn(other, 'default', name, '2.0')
    expect((await list(m, 'default', `?name=${name}`)).map((d) => d.version), 'newest first').to.deep.equal(['2.0', '1.0'])
    expect((await list(m, 'default', `?name=${name}&version=2.0`)).map((d) => d.version)).to.deep.equal(['2.0'])
    expect((await list(m, 'default', `?name=${name}&version=>1.0`)).map((d) => d.version)).to.deep.equal(['2.0'])
    expect((await list(m, 'default', `?name=${name}&limit=1&skip=1`)).map((d) => d.version)).to.deep.equal(['1.0'])
    expect((await list(m, 'default', `?name=${name}&version=3.0`))).to.deep.equal([])
    expect((await get(`${nsBase(m, 'default')}/datatypes?bogus=1`)).status).to.equal(400)
    const one = await get<ApiDatatype>(`${nsBase(m, 'default')}/datatypes/${name}/2.0`)
    expect(one.status).to.equal(200)
    expect(one.body).to.deep.include({ name, version: '2.0', value: { type: 'number' } })
    expect((await get(`${nsBase(m, 'default')}/datatypes/${name}/9.0`)).status).to.equal(404)
  })

  it('two members define the same name and version at once: the first pinned on chain wins everywhere, the other is rejected', async () => {
    const name = `race-${run}`
    const [a, b] = await Promise.all([
      define(members[0]!, 'default', { name, version: '1', value: { type: 'string' } }),
      define(members[1]!, 'default', { name, version: '1', value: { type: 'integer' } }),
    ])
    expect(a.status, JSON.stringify(a.body)).to.equal(202)
    expect(b.status, JSON.stringify(b.body)).to.equal(202)
    const ids = [a.body.header.id, b.body.header.id]
    const winner = (await datatypeOn(members[2]!, 'default', name, '1')).message
    expect(ids).to.include(winner)
    const loser = ids.find((id) => id !== winner)!
    for (const m of members) {
      const dt = await datatypeOn(m, 'default', name, '1')
      expect(dt.message, m.org).to.equal(winner)
      expect((await list(m, 'default', `?name=${name}`)).length, `${m.org}: exactly one`).to.equal(1)
      expect((await settledOn(m, 'svc_system', winner)).state, m.org).to.equal('confirmed')
      const lost = await settledOn(m, 'svc_system', loser)
      expect(lost.state, m.org).to.equal('rejected')
      expect(lost.rejectReason, m.org).to.contain(winner)
      const events = await get<ApiEvent[]>(`${nsBase(m, 'svc_system')}/events?type=message_rejected&reference=${loser}`)
      expect(events.body, `${m.org}: message_rejected`).to.have.length(1)
    }
    // Both are settled, so both are pinned: the winner must be the one the chain ordered first, not merely the one
    // every member agrees on.
    const { order } = await chainOrder(t.net.description, new Map(ids.map((id) => [id, 'race'])))
    expect(order.get('race'), 'both definitions, in chain order').to.have.length(2)
    expect(winner, 'the winner is the definition pinned first').to.equal(order.get('race')![0])
  })

  it('refuses bad definitions with 400: schema, versions, names, validator', async () => {
    const m = members[2]!
    const bad: unknown[] = [
      { name: `bad-${run}`, version: '1', value: { type: 'nonsense' } },
      { name: `bad-${run}`, version: '1', value: 'not a schema' },
      { name: `bad-${run}`, version: '1', value: { $ref: 'https://example.com/remote.json' } },
      { name: `bad-${run}`, version: '1' },
      { name: `bad-${run}`, version: 'v1', value: {} },
      { name: `bad-${run}`, version: '1..2', value: {} },
      { name: `bad-${run}`, version: 'latest', value: {} },
      { name: 'bad name', version: '1', value: {} },
      { name: `bad-${run}`, version: '1', value: {}, validator: 'none' },
    ]
    for (const body of bad) {
      const r = await define(m, 'default', body)
      expect(r.status, JSON.stringify(body)).to.equal(400)
      expect((r.body as unknown as { error: string }).error, JSON.stringify(body)).to.match(/^INVALID_FIELD: /)
    }
    const ok = await define(m, 'default', { name: `beta-${run}`, version: '1.0.0-beta.1', value: { type: 'string' } }, { confirm: true, path: 'broadcast/datatype' })
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200)
    const dt = await get<ApiDatatype>(`${nsBase(m, 'default')}/datatypes/beta-${run}/1.0.0-beta.1`)
    expect(dt.status).to.equal(200)
  })

  it('data is validated against its datatype when sent, and confirmed on every member when it conforms', async () => {
    const m = members[0]!
    const name = `order-${run}`
    const def = await define(m, 'default', { name, version: '1.0', value: WIDGET_SCHEMA }, { confirm: true })
    expect(def.status, JSON.stringify(def.body)).to.equal(200)
    // Every member must know it before it can confirm data naming it.
    for (const other of members) await datatypeOn(other, 'default', name, '1.0')

    const sender = members[1]!
    const good = await broadcast(sender, 'default', { data: [{ datatype: { name, version: '1.0' }, value: { name: 'bolt', size: 3 } }] })
    expect(good.status, JSON.stringify(good.body)).to.equal(202)
    for (const other of members) expect((await settledOn(other, 'default', good.body.header.id)).state, other.org).to.equal('confirmed')

    const bad = await broadcast(sender, 'default', { data: [{ datatype: { name, version: '1.0' }, value: { name: 7, size: 0 } }] })
    expect(bad.status).to.equal(400)
    const error = (bad.body as unknown as { error: string }).error
    expect(error).to.match(/^SCHEMA_VALIDATION_FAILED: /)
    expect(error).to.contain('/name must be string')
    expect(error).to.contain('/size must be >= 1')

    const unknown = await broadcast(sender, 'default', { data: [{ datatype: { name, version: '9.9' }, value: { name: 'x' } }] })
    expect(unknown.status).to.equal(400)
    expect((unknown.body as unknown as { error: string }).error).to.match(/^UNKNOWN_DATATYPE: /)
  })

  it('uploaded data is validated against its datatype too, JSON and multipart alike, and a typed blob can be sent', async () => {
    const m = members[0]!
    const name = `file-${run}`
    const schema = { type: 'object', properties: { filename: { type: 'string', pattern: '\\.csv$' }, size: { type: 'integer', maximum: 1000 } }, required: ['filename', 'size'] }
    const def = await define(m, 'default', { name, version: '2.0.0-rc.1', value: schema }, { confirm: true })
    expect(def.status, JSON.stringify(def.body)).to.equal(200)
    const datatype = { name, version: '2.0.0-rc.1' }

    const json = await request<{ id: string; datatype?: unknown; error?: string }>('POST', `${nsBase(m, 'default')}/data`, { datatype, value: { filename: 'a.csv', size: 10 } })
    expect(json.status, JSON.stringify(json.body)).to.equal(200)
    expect(json.body.datatype).to.deep.equal(datatype)
    const badJson = await request<{ error: string }>('POST', `${nsBase(m, 'default')}/data`, { datatype, value: { filename: 'a.txt', size: 10 } })
    expect(badJson.status).to.equal(400)
    expect(badJson.body.error).to.match(/^SCHEMA_VALIDATION_FAILED: .*filename/)

    // autometa fills in filename and size, which the schema then judges.
    const fits = await uploadBlob(m, 'default', Buffer.from('a,b\n1,2\n'), { filename: 'rows.csv', autometa: true, datatype })
    expect(fits.status, JSON.stringify(fits.body)).to.equal(200)
    const held = async () => ((await get<{ id: string }[]>(`${nsBase(m, 'default')}/data?limit=250`)).body ?? []).map((d) => d.id)
    const before = await held()
    const tooBig = await uploadBlob(m, 'default', Buffer.alloc(2000, 1), { filename: 'rows.csv', autometa: true, datatype })
    expect(tooBig.status).to.equal(400)
    expect(tooBig.body.error).to.match(/size/)
    expect(await held(), 'nothing recorded for the refused upload').to.deep.equal(before)

    const sent = await broadcast(members[0]!, 'default', { data: [{ id: fits.body.id }, { id: json.body.id }] })
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202)
    for (const other of members) expect((await settledOn(other, 'default', sent.body.header.id)).state, other.org).to.equal('confirmed')
  })

  it('a datatype belongs to its namespace', async () => {
    const m = members[2]!
    const ns = `other-${run}`
    const name = `scoped-${run}`
    const r = await define(m, ns, { name, version: '1', value: { type: 'string' } }, { confirm: true })
    expect(r.status, JSON.stringify(r.body)).to.equal(200)
    expect(r.body.header.topics).to.deep.equal([`svc_ns_${ns}`])
    for (const other of members) {
      const dt = await datatypeOn(other, ns, name, '1')
      expect(dt.namespace).to.equal(ns)
      expect(await list(other, 'default', `?name=${name}`), `${other.org}: not in default`).to.deep.equal([])
      expect((await get(`${nsBase(other, 'default')}/datatypes/${name}/1`)).status).to.equal(404)
    }
    const inDefault = await broadcast(m, 'default', { data: [{ datatype: { name, version: '1' }, value: 'x' }] })
    expect(inDefault.status).to.equal(400)
    const inOwn = await broadcast(m, ns, { data: [{ datatype: { name, version: '1' }, value: 'x' }] }, { confirm: true })
    expect(inOwn.status, JSON.stringify(inOwn.body)).to.equal(200)
  })
})
