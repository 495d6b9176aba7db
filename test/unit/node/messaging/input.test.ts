import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { jsonNodesBuilt, parseJsonRaw } from '../../../../node/core/json.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { parseMessageInput, type MessageInputLimits } from '../../../../node/messaging/input.js'

function refusal(f: () => unknown): ParleyError {
  try {
    f()
  } catch (e) {
    expect(e).to.be.instanceOf(ParleyError)
    return e as ParleyError
  }
  expect.fail('expected a refusal')
}

describe('message input limits', () => {
  const parse = (body: unknown, limits?: MessageInputLimits) => parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup: false, ...(limits ? { limits } : {}) })
  const limits = (over: Partial<MessageInputLimits>): MessageInputLimits => ({ ...DEFAULT_REQUEST_LIMITS, ...over })
  const max = DEFAULT_REQUEST_LIMITS.idempotencyKeyChars

  it(`takes an idempotency key of up to ${max} characters and refuses a longer one, naming the limit`, () => {
    expect(parse({ data: [{ value: 1 }], idempotencyKey: 'k'.repeat(max) }).idempotencyKey).to.have.length(max)
    const err = refusal(() => parse({ data: [{ value: 1 }], idempotencyKey: 'k'.repeat(1024 * 1024) }))
    expect(err.code).to.equal('INVALID_FIELD')
    // The refusal names the limit, and does not echo a megabyte of key back.
    expect(err.message).to.equal(`idempotencyKey is ${1024 * 1024} characters long; this member accepts at most ${max} characters (limits.idempotencyKeyChars)`)
  })

  it('refuses more data items than the member allows, before reading them, naming the limit', () => {
    const data = Array.from({ length: 4 }, (_, i) => ({ value: i }))
    expect(parse({ data }, limits({ dataPerMessage: 4 })).data).to.have.length(4)
    const err = refusal(() => parse({ data: [...data, { value: 'x' }] }, limits({ dataPerMessage: 4 })))
    expect(err.code).to.equal('INVALID_FIELD')
    expect(err.message).to.equal('data has 5 items; this member accepts at most 4 (limits.dataPerMessage)')
    // The default holds too: 210,000 items is refused at once, counted without building a node for any.
    const body = JSON.stringify({ data: Array.from({ length: 210_000 }, () => ({ value: 1 })) })
    const before = jsonNodesBuilt()
    const many = refusal(() => parseMessageInput(parseJsonRaw(body), { allowGroup: false }))
    expect(many.message).to.match(/data has 210000 items; this member accepts at most 100 \(limits.dataPerMessage\)/)
    expect(jsonNodesBuilt() - before).to.be.lessThan(10)
  })

  it('refuses more topics than the member allows', () => {
    expect(parse({ header: { topics: ['a', 'b'] }, data: [{ value: 1 }] }, limits({ topicsPerMessage: 2 })).header.topics).to.deep.equal(['a', 'b'])
    const err = refusal(() => parse({ header: { topics: ['a', 'b', 'c'] }, data: [{ value: 1 }] }, limits({ topicsPerMessage: 2 })))
    expect(err.message).to.equal('header.topics has 3 topics; this member accepts at most 2 (limits.topicsPerMessage)')
  })

  it('refuses a value larger than the member allows as a 413, counting UTF-8 bytes of the compacted JSON', () => {
    // "é" is two bytes: 3 of them and the quotes are 8 bytes.
    expect(parse({ data: [{ value: 'ééé' }] }, limits({ valueBytes: 8 })).data).to.have.length(1)
    const err = refusal(() => parse({ data: [{ value: 1 }, { value: 'éééé' }] }, limits({ valueBytes: 8 })))
    expect(err.code).to.equal('PAYLOAD_TOO_LARGE')
    expect(err.message).to.equal('data[1].value is 10 bytes as stored (compacted JSON, <, > and & escaped as Go writes them); this member accepts at most 8 bytes (limits.valueBytes)')
    // Counted as stored: each '<' is six bytes once escaped.
    expect(refusal(() => parse({ data: [{ value: '<' }] }, limits({ valueBytes: 7 }))).message).to.match(/^data\[0\].value is 8 bytes as stored/)
  })
})

describe('message input fields', () => {
  const parse = (body: unknown, allowGroup = true) => parseMessageInput(parseJsonRaw(JSON.stringify(body)), { allowGroup })
  const refused = (body: unknown, allowGroup = true): string => {
    const err = refusal(() => parse(body, allowGroup))
    expect(err.code).to.equal('INVALID_FIELD')
    return err.message
  }
  const data = [{ value: 1 }]
  const GROUP = 'ab'.repeat(32)

  it('takes the header fields a client may give, leaving out empty ones, and the type the route implies', () => {
    const cid = '4a1c8a3e-0b5f-4c1e-9d2a-7f3e5b6c8d9e'
    const input = parse({ header: { tag: 'order', topic: 'orders', txtype: 'unpinned', author: 'did:firefly:org/org0', key: '0xab', cid: cid.toUpperCase(), type: 'private', group: GROUP }, data })
    expect(input.header).to.deep.equal({ tag: 'order', topics: ['orders'], txtype: 'none', author: 'did:firefly:org/org0', key: '0xab', cid, group: GROUP })
    expect(parse({ header: { tag: '', txtype: '', author: '', key: '', cid: '', topics: null, id: '', namespace: null }, data }).header).to.deep.equal({})
    expect(parse({ header: null, data }).header).to.deep.equal({})
    expect(parse({ header: { topics: [] }, data }).header).to.deep.equal({ topics: [] })
  })

  it('refuses what the node sets, a group on a broadcast, and a group that is not a hash string', () => {
    expect(refused({ header: { id: '4a1c8a3e-0b5f-4c1e-9d2a-7f3e5b6c8d9e' }, data })).to.equal('header.id is set by the node and cannot be given')
    expect(refused({ header: { type: 'definition' }, data })).to.equal('header.type is set by the node and cannot be given')
    expect(refused({ header: { group: GROUP }, data }, false)).to.equal('header.group is set by the node and cannot be given')
    expect(refused({ header: { group: 7 }, data })).to.equal('header.group must be a group hash (64 hex characters)')
    expect(refused({ header: [], data })).to.equal('header must be an object')
    expect(refused({ header: { txtype: 'token_pool' }, data })).to.equal('header.txtype must be batch_pin or none (unpinned): "token_pool"')
    expect(refused({ header: { tag: '-x' }, data })).to.match(/^header.tag must be 1-64 letters/)
  })

  it('refuses topics that are not names or repeated', () => {
    expect(refused({ header: { topics: 5 }, data })).to.equal('header.topics must be an array of strings')
    expect(refused({ header: { topics: ['a', 'a'] }, data })).to.equal('header.topics holds the same topic twice')
    expect(refused({ header: { topics: ['a b'] }, data })).to.equal('topic must be 1-64 letters, digits, \'.\', \'_\' or \'-\', starting and ending alphanumeric: "a b"')
    // The most topics a member may take (config ceiling 10), each of the longest name (64), are 640 characters.
    expect(parse({ header: { topics: Array.from({ length: 10 }, (_, i) => `${i}${'t'.repeat(63)}`) }, data }).header.topics).to.have.length(10)
  })

  it('reads a group of members by identity and node, with its name', () => {
    const input = parse({ group: { name: 'deal', members: [{ identity: 'org1', node: 'node1' }, { identity: 'org2' }] }, data })
    expect(input.group).to.deep.equal({ name: 'deal', members: [{ identity: 'org1', node: 'node1' }, { identity: 'org2' }] })
    expect(parse({ group: { members: [{ identity: 'org1', node: '' }] }, data }).group).to.deep.equal({ members: [{ identity: 'org1' }] })
    expect(parse({ group: null, data }, false)).to.not.have.property('group')
  })

  it('refuses a group that is not one, with no members, a member that is not an object or has no identity', () => {
    expect(refused({ group: { members: [{ identity: 'org1' }] }, data }, false)).to.equal('a broadcast has no group; use messages/private for a private send')
    expect(refused({ group: ['org1'], data })).to.equal('group must be an object {members: [{identity}]}')
    expect(refused({ group: {}, data })).to.equal('group.members must hold at least one member')
    expect(refused({ group: { members: 'org1' }, data })).to.equal('group.members must hold at least one member')
    expect(refused({ group: { members: [] }, data })).to.equal('group.members must hold at least one member')
    expect(refused({ group: { members: [{ identity: 'org1' }, 'org2'] }, data })).to.equal('group.members[1] must be {identity}')
    expect(refused({ group: { members: [{ node: 'node1' }] }, data })).to.equal('group.members[0].identity is required')
  })

  it('refuses a body without data items, or with items of the wrong shape', () => {
    expect(refused([])).to.equal('the request body must be a JSON object')
    expect(refused({})).to.equal('data is required: an array of {value} or {id} items')
    expect(refused({ data: {} })).to.equal('data must be an array')
    expect(refused({ data: [] })).to.equal('data must hold at least one item')
    expect(refused({ data: [5] })).to.equal('data[0] must be an object: {value} or {id}')
    expect(refused({ data: [{ id: '4a1c8a3e-0b5f-4c1e-9d2a-7f3e5b6c8d9e', value: 1 }] })).to.equal('data[0] has both id and value; give one')
    expect(refused({ data: [{ value: null }] })).to.equal('data[0] needs a value (or the id of uploaded data)')
    const id = '4a1c8a3e-0b5f-4c1e-9d2a-7f3e5b6c8d9e'
    expect(refused({ data: [{ id }, { id }] })).to.equal('data refers to the same id more than once')
  })
})
