import { expect } from 'chai'
import { compare, formatVerify, messageKey, type MemberView, type MessageView, type VerifyInput } from '../../../network/verify.js'

/**
 * verify's comparison on fabricated member views: the test-only path that feeds one member a different order (a
 * real member cannot be made to confirm out of order; that is what verify is there to catch).
 */
const ORGS = ['org0', 'org1', 'org2']
const did = (org: string): string => `did:firefly:org/${org}`

function msg(id: string, opts: Partial<MessageView> & { batch: string }): MessageView {
  return {
    id,
    namespace: 'default',
    type: 'broadcast',
    txtype: 'batch_pin',
    author: did('org0'),
    topics: ['T'],
    hash: `h-${id}`,
    datahash: `dh-${id}`,
    data: [{ id: `d-${id}`, hash: `x-${id}` }],
    state: 'confirmed',
    ...opts,
  }
}

function member(org: string, settled: MessageView[], extra: Partial<MemberView> = {}): MemberView {
  return {
    org,
    node: org.replace('org', 'node'),
    did: did(org),
    settled: settled.map((m, i) => ({ id: m.id, outcome: m.state === 'rejected' ? 'rejected' : 'confirmed', sequence: 10 + i })),
    messages: new Map(settled.map((m) => [m.id, m])),
    ...extra,
  }
}

// Two batches pinned in this order: b1 holds a1, a2 (topic T) and u1 (topic U); b2 holds a3 (T).
const a1 = msg('a1', { batch: 'b1' })
const a2 = msg('a2', { batch: 'b1' })
const u1 = msg('u1', { batch: 'b1', topics: ['U'] })
const a3 = msg('a3', { batch: 'b2', author: did('org1') })
// A private topic P of group g (org0 and org1) in batch b3.
const p1 = msg('p1', { batch: 'b3', type: 'private', group: 'g', topics: ['P'] })
const p2 = msg('p2', { batch: 'b3', type: 'private', group: 'g', topics: ['P'] })

function input(members: MemberView[]): VerifyInput {
  return {
    pins: [
      { batch: 'b1', block: 5, logIndex: 0 },
      { batch: 'b3', block: 6, logIndex: 0 },
      { batch: 'b2', block: 6, logIndex: 1 },
    ],
    manifests: new Map([
      ['b1', ['a1', 'a2', 'u1']],
      ['b2', ['a3']],
      ['b3', ['p1', 'p2']],
    ]),
    groups: new Map([['g', ['org0', 'org1']]]),
    members,
  }
}

const healthy = (): MemberView[] => [member('org0', [a1, a2, u1, p1, p2, a3]), member('org1', [a1, u1, a2, p1, p2, a3]), member('org2', [a1, a2, u1, a3])]

describe('verify: comparing members with the chain', () => {
  it('passes when every member settled each topic in chain order (interleaving across topics is free)', () => {
    const r = compare(input(healthy()))
    expect(r.differences).to.deep.equal([])
    expect(r.ok).to.equal(true)
    expect(r.messages).to.equal(6)
    expect(r.topics.map((t) => [t.topic, t.group ?? null, t.members, t.messages])).to.deep.equal([
      ['P', 'g', ['org0', 'org1'], 2],
      ['T', null, ORGS, 3],
      ['U', null, ORGS, 1],
    ])
  })

  it('tells apart two messages sharing an id by their hashes: each its own verdict, compared member by member', () => {
    // org1 pins b5 after b2: a message of its own under a1's id, on topic R.
    const reuse = msg('a1', { batch: 'b5', author: did('org1'), topics: ['R'], hash: 'h-reuse', state: 'rejected' })
    const keyed = (org: string, list: MessageView[]): MemberView => ({
      org,
      node: org.replace('org', 'node'),
      did: did(org),
      settled: list.map((m, i) => ({ id: messageKey(m.id, m.hash), outcome: m.state === 'rejected' ? 'rejected' : 'confirmed', sequence: 10 + i })),
      messages: new Map(list.map((m) => [messageKey(m.id, m.hash), m])),
    })
    const base = input([])
    const keyedInput = (members: MemberView[]): VerifyInput => ({
      ...base,
      pins: [...base.pins, { batch: 'b5', block: 7, logIndex: 0 }],
      manifests: new Map([...[...base.manifests].map(([b, ids]) => [b, ids.map((id) => messageKey(id, `h-${id}`))] as [string, string[]]), ['b5', [messageKey('a1', 'h-reuse')]]]),
      members,
    })
    const agreeing = [keyed('org0', [a1, a2, u1, a3, reuse]), keyed('org1', [a1, a2, u1, reuse, a3]), keyed('org2', [reuse, a1, a2, u1, a3])]
    expect(compare(keyedInput(agreeing)).differences).to.deep.equal([])
    const split = [...agreeing.slice(0, 2), keyed('org2', [a1, a2, u1, a3, { ...reuse, state: 'confirmed' }])]
    expect(compare(keyedInput(split)).differences.map((d) => [d.kind, d.message, d.hash])).to.deep.equal([['outcome', 'a1', 'h-reuse']])
  })

  it('orders a private topic per author: two authors in the group may settle in either order', () => {
    // org1 sends q1 on P in b4, pinned after b3 (org0's p1, p2); org1 settles its own q1 before org0's p1 and p2.
    const q1 = msg('q1', { batch: 'b4', type: 'private', group: 'g', topics: ['P'], author: did('org1') })
    const i = input([member('org0', [a1, a2, u1, p1, p2, a3, q1]), member('org1', [q1, a1, u1, a2, p1, p2, a3]), member('org2', [a1, a2, u1, a3])])
    const r = compare({ ...i, pins: [...i.pins, { batch: 'b4', block: 7, logIndex: 0 }], manifests: new Map([...i.manifests, ['b4', ['q1']]]) })
    expect(r.differences).to.deep.equal([])
    expect(r.topics.filter((t) => t.topic === 'P').map((t) => [t.author, t.messages])).to.deep.equal([
      [did('org0'), 2],
      [did('org1'), 1],
    ])
    // One author's own order still counts.
    const swapped = compare(input([member('org0', [a1, a2, u1, p1, p2, a3]), member('org1', [a1, u1, a2, p2, p1, a3]), member('org2', [a1, a2, u1, a3])]))
    expect(swapped.differences.map((d) => [d.kind, d.member])).to.deep.equal([['order', 'org1']])
  })

  it("places a batch by its own key's pin with its own hash: an earlier pin of its id by anyone else places nothing", () => {
    // b2 (a3, topic T) is squatted before b1 by another key: by the first pin alone, a3 would come before a1 and a2.
    const i = input(healthy())
    const pins = [{ batch: 'b2', block: 4, logIndex: 0, signer: '0xsquat', batchHash: 'junk' }, ...i.pins.map((p) => ({ ...p, signer: p.batch === 'b2' ? '0xorg1' : '0xorg0', batchHash: `hash-${p.batch}` }))]
    const owners = new Map([
      ['b1', { key: '0xorg0', hash: 'hash-b1' }],
      ['b2', { key: '0xorg1', hash: 'hash-b2' }],
      ['b3', { key: '0xorg0', hash: 'hash-b3' }],
    ])
    expect(compare({ ...i, pins, owners }).differences).to.deep.equal([])
    expect(compare({ ...i, pins }).differences.map((d) => d.kind)).to.include('order')
  })

  it('reports a member fed a different order on a broadcast topic, naming the position and both orders', () => {
    const views = healthy()
    views[2] = member('org2', [a2, a1, u1, a3])
    const r = compare(input(views))
    expect(r.ok).to.equal(false)
    expect(r.differences).to.have.length(1)
    const d = r.differences[0]!
    expect(d).to.include({ kind: 'order', member: 'org2', message: 'a2' })
    expect(d.topic).to.deep.equal({ namespace: 'default', topic: 'T' })
    expect(d.detail).to.contain('at position 1 it has a2 where the chain has a1')
    expect(formatVerify({ ...r, namespaces: ['default'], pins: 3 })).to.match(/DIFFERS: 1 difference\n {2}order {7}org2 settled default\/T out of chain order/)
  })

  it('reports a different order on a private topic among the group only', () => {
    const views = healthy()
    views[1] = member('org1', [a1, u1, a2, p2, p1, a3])
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.member, x.topic?.topic, x.topic?.group])).to.deep.equal([['order', 'org1', 'P', 'g']])
  })

  it('reports a member that is behind (a prefix of the chain order), or only notes it with allowBehind', () => {
    const views = healthy()
    views[2] = member('org2', [a1, u1])
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.member, x.topic?.topic, x.message])).to.deep.equal([['behind', 'org2', 'T', 'a2']])
    expect(r.differences[0]!.detail).to.contain('has settled 1 of the 3 messages pinned on default/T')
    const lenient = compare(input(views), { allowBehind: true })
    expect(lenient.ok).to.equal(true)
    expect(lenient.notes.map((x) => x.kind)).to.deep.equal(['behind'])
  })

  it('a private topic is expected only on the group: a non-member holding it is an outsider', () => {
    const views = healthy()
    views[2] = member('org2', [a1, a2, u1, p1, a3])
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.member])).to.deep.equal([['outsider', 'org2']])
  })

  it('reports a message settled twice by a member', () => {
    const views = healthy()
    const v = member('org1', [a1, u1, a2, p1, p2, a3])
    v.settled.push({ id: 'a1', outcome: 'confirmed', sequence: 99 })
    views[1] = v
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.member, x.message])).to.deep.equal([['duplicate', 'org1', 'a1']])
  })

  it('reports data hashes that differ between members, and a message confirmed on one member and rejected on another', () => {
    const views = healthy()
    views[1] = member('org1', [a1, u1, { ...a2, data: [{ id: 'd-a2', hash: 'other' }] }, p1, p2, { ...a3, state: 'rejected' }])
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.message])).to.deep.equal([
      ['outcome', 'a3'],
      ['hash', 'a2'],
    ])
    expect(r.differences[1]!.detail).to.contain('org1: hash')
  })

  it('reports members holding a data item with different carried fields (digests), each one naming its own', () => {
    const other = { ...a1, data: [{ id: 'd-a1', hash: 'x-a1', digest: 'f'.repeat(64) }] }
    const same = { ...a1, data: [{ id: 'd-a1', hash: 'x-a1', digest: 'e'.repeat(64) }] }
    const r = compare(input([member('org0', [same, a2, u1, a3]), member('org1', [other, a2, u1, a3]), member('org2', [same, a2, u1, a3])]))
    expect(r.differences.map((d) => [d.kind, d.message])).to.deep.equal([['hash', 'a1']])
    expect(r.differences[0]!.detail).to.contain(`carried ${'f'.repeat(8)}`)
  })

  it('reports a pinned message settled while its batch is not on the chain; unpinned messages are not ordered', () => {
    const stray = msg('s1', { batch: 'b9' })
    const unpinned = msg('n1', { batch: 'b8', txtype: 'none', type: 'private', group: 'g', topics: ['P'] })
    const views = healthy()
    views[0] = member('org0', [a1, a2, u1, p1, unpinned, p2, a3, stray])
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.member, x.message])).to.deep.equal([['not-pinned', 'org0', 's1']])
  })

  it('a member that could not be read is a difference, and is not compared further', () => {
    const views = healthy()
    views[2] = member('org2', [], { unreachable: 'org2 is paused' })
    const r = compare(input(views))
    expect(r.differences.map((x) => [x.kind, x.member])).to.deep.equal([['unreachable', 'org2']])
  })

  it('a batch pinned twice keeps its first place on the chain', () => {
    const i = input(healthy())
    const r = compare({ ...i, pins: [...i.pins, { batch: 'b1', block: 9, logIndex: 0 }] })
    expect(r.differences).to.deep.equal([])
  })
})
