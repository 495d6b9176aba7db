import { expect } from 'chai'
import { parseGroupinit } from '../../../../node/identity/groupinit.js'
import { groupHash } from '../../../../node/core/hashes.js'
import { newId, type Hash, type IdentityId } from '../../../../node/core/ids.js'

const NS = 'default'
const NODE_A = newId<IdentityId>()
const NODE_B = newId<IdentityId>()
const A = { identity: 'did:firefly:org/a', node: NODE_A }
const B = { identity: 'did:firefly:org/b', node: NODE_B }

/** What a peer's groupinit value says is all it is: each malformed shape is refused with its reason, never thrown. */
describe('identity: parsing a groupinit', () => {
  const parse = (value: unknown, expected?: Hash) => parseGroupinit(typeof value === 'string' ? value : JSON.stringify(value), expected, NS)
  const reason = (r: ReturnType<typeof parseGroupinit>) => (r.ok ? 'accepted' : r.reason)

  it('reads a group, sorted by identity, whose hash is the one the message names', () => {
    const hash = groupHash({ namespace: NS, name: 'g', members: [A, B] })
    const r = parse({ namespace: NS, name: 'g', members: [B, A], hash, created: '2024-01-02T03:04:05Z' }, hash)
    expect(r).to.deep.equal({ ok: true, group: { hash, namespace: NS, name: 'g', members: [A, B], created: '2024-01-02T03:04:05Z' } })
  })

  it('takes an absent name as the empty one, and an absent or non-string created as the epoch', () => {
    const hash = groupHash({ namespace: NS, name: '', members: [A, B] })
    const r = parse({ namespace: NS, members: [A, B], created: 12 })
    expect(r).to.deep.equal({ ok: true, group: { hash, namespace: NS, name: '', members: [A, B], created: '1970-01-01T00:00:00Z' } })
  })

  it('refuses an absent value, one that is not JSON, and JSON that is not an object', () => {
    expect(reason(parseGroupinit(null, undefined, NS))).to.equal('the groupinit carries no value')
    expect(reason(parseGroupinit(undefined, undefined, NS))).to.equal('the groupinit carries no value')
    expect(reason(parseGroupinit('', undefined, NS))).to.equal('the groupinit carries no value')
    expect(reason(parse('{"members":'))).to.equal('the groupinit value is not JSON')
    expect(reason(parse('null'))).to.equal('the groupinit value is not an object')
    expect(reason(parse('[1,2]'))).to.equal('the groupinit value is not an object')
    expect(reason(parse('"a group"'))).to.equal('the groupinit value is not an object')
  })

  it('refuses a name or namespace that is not a string, and a group of another namespace (or of none)', () => {
    expect(reason(parse({ namespace: NS, name: 7, members: [A, B] }))).to.equal('the group name is not a string')
    expect(reason(parse({ namespace: ['default'], members: [A, B] }))).to.equal('the group namespace is not a string')
    expect(reason(parse({ namespace: 'other', members: [A, B] }))).to.equal('the group is in namespace "other", its message in default')
    expect(reason(parse({ members: [A, B] }))).to.equal('the group is in namespace "", its message in default')
  })

  it('refuses fewer than two members, or members that are not an array', () => {
    expect(reason(parse({ namespace: NS, members: [A] }))).to.equal('the group needs at least two members')
    expect(reason(parse({ namespace: NS, members: { 0: A, 1: B } }))).to.equal('the group needs at least two members')
    expect(reason(parse({ namespace: NS }))).to.equal('the group needs at least two members')
  })

  it('refuses a member that is null, lacks its identity, or names a node that is not a UUID', () => {
    const malformed = 'a group member is not {identity, node}'
    expect(reason(parse({ namespace: NS, members: [A, null] }))).to.equal(malformed)
    expect(reason(parse({ namespace: NS, members: [A, { node: NODE_B }] }))).to.equal(malformed)
    expect(reason(parse({ namespace: NS, members: [A, { identity: B.identity }] }))).to.equal(malformed)
    expect(reason(parse({ namespace: NS, members: [A, { identity: B.identity, node: 42 }] }))).to.equal(malformed)
    expect(reason(parse({ namespace: NS, members: [A, { identity: B.identity, node: 'node1' }] }))).to.equal(malformed)
  })

  it('refuses a member named twice on the same node, and accepts one identity on two nodes', () => {
    expect(reason(parse({ namespace: NS, members: [A, B, { ...A }] }))).to.equal(`member did:firefly:org/a on ${NODE_A} appears twice`)
    expect(parse({ namespace: NS, members: [A, { identity: A.identity, node: NODE_B }] }).ok).to.equal(true)
  })

  it('refuses a stated hash its members do not hash to, and a group other than the message names', () => {
    const hash = groupHash({ namespace: NS, name: '', members: [A, B] })
    const other = groupHash({ namespace: NS, name: 'other', members: [A, B] })
    expect(reason(parse({ namespace: NS, members: [A, B], hash: other }))).to.equal(`the group states hash ${other}, its members hash to ${hash}`)
    expect(reason(parse({ namespace: NS, members: [A, B] }, other))).to.equal(`the group hashes to ${hash}, the message names group ${other}`)
  })
})
