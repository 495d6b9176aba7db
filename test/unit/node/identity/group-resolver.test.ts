import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'
import { GroupResolver, groupinitFor, groupinitValue, sealGroup, type ResolvedGroup } from '../../../../node/identity/group-resolver.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { HTTP_STATUS } from '../../../../node/api/errors.js'
import { groupHash } from '../../../../node/core/hashes.js'
import { newId, type Hash, type IdentityId, type MessageId } from '../../../../node/core/ids.js'
import { now, type Timestamp } from '../../../../node/core/time.js'
import { localIdentity, TAG_DEFINE_GROUP, type Group, type GroupInput, type Identity, type IdentityType } from '../../../../node/model/index.js'

const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex')
const KEY = '0x' + '0a'.repeat(20)
const NS = 'default'

/**
 * Group resolution as FireFly's privatemessaging/recipients.go does it, over a real (temporary) database of registered
 * orgs and nodes: each way of naming a member and its node, the author added, the hash by FireFly's formula, and each
 * refusal a 400 naming the member.
 */
describe('groups: resolving a send\'s group', () => {
  const temp = new TempDirs()
  let repos: Repos
  let resolver: GroupResolver
  const ids: Record<string, Identity> = {}

  async function add(name: string, type: IdentityType | 'custom', did: string, parent?: string): Promise<Identity> {
    const id = newId<IdentityId>()
    const i: Identity = {
      id,
      did,
      type: type as IdentityType,
      ...(parent ? { parent: ids[parent]!.id } : {}),
      namespace: 'svc_system',
      name,
      messages: { claim: newId<MessageId>() },
      // A node publishes where and how it receives private batches.
      ...(type === 'node' ? { profile: { id: name, endpoint: `https://127.0.0.1:1/${name}`, cert: '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n' } } : {}),
      created: now(),
    }
    await repos.db.transaction((tx) => repos.identities.insert(tx, i))
    ids[name] = i
    return i
  }
  const org = async (name: string) => {
    await registerOrg(repos.db, repos.identities, name, '0x' + sha(name).slice(0, 40))
    ids[name] = repos.identities.byDid(`did:firefly:org/${name}`)!
  }
  const node = (name: string, parent: string) => add(name, 'node', `did:firefly:node/${name}`, parent)

  before(async () => {
    repos = await openRepos(join(await temp.make('parley-groups-resolve-'), 'db'))
    await org('org0')
    await node('node0', 'org0')
    await org('org1')
    await node('node1', 'org1')
    await org('org2')
    await node('node2', 'org2')
    // An org whose node has not registered yet.
    await org('org3')
    // An org with two nodes: node4a registered first.
    await org('org4')
    await node('node4a', 'org4')
    await node('node4b', 'org4')
    // A registered identity under org1 that is neither an org nor a node (FireFly's custom identities).
    await add('acme', 'custom', 'did:firefly:acme', 'org1')
    await add('acme0', 'custom', 'did:firefly:acme0', 'org0')
    resolver = new GroupResolver({ identities: repos.identities, groups: repos.groups, self: localIdentity('org0', 'node0', KEY) })
  })
  after(async () => {
    await repos.db.close()
    await temp.cleanup()
  })

  const resolve = (members: GroupInput['members'], name?: string): ResolvedGroup => resolver.resolve(NS, { members, ...(name !== undefined ? { name } : {}) })
  const member = (org: string, node: string) => ({ identity: `did:firefly:org/${org}`, node: ids[node]!.id })
  const self = () => member('org0', 'node0')

  /** The refusal `f` throws: a ParleyError INVALID_FIELD, which the API answers 400. */
  function refusal(f: () => unknown): string {
    try {
      f()
    } catch (e) {
      expect(e).to.be.instanceOf(ParleyError)
      expect((e as ParleyError).code).to.equal('INVALID_FIELD')
      expect(HTTP_STATUS[(e as ParleyError).code]).to.equal(400)
      return (e as ParleyError).message
    }
    return expect.fail('expected a refusal')
  }

  describe('member identities', () => {
    it('an org name, an org DID and FireFly\'s org-id alias resolve to the same org DID', () => {
      for (const identity of ['org1', 'did:firefly:org/org1', `did:firefly:org/${ids.org1!.id}`, `did:firefly:org/${ids.org1!.id.toUpperCase()}`]) {
        const { group } = resolve([{ identity }])
        expect(group.members, identity).to.deep.equal([self(), member('org1', 'node1')])
      }
    })

    it('the DID of another registered identity is kept as its DID; its node is its parent org\'s (FireFly walks up the parents)', () => {
      const { group } = resolve([{ identity: 'did:firefly:acme' }])
      expect(group.members).to.deep.equal([{ identity: 'did:firefly:acme', node: ids.node1!.id }, self()])
    })
  })

  describe('member nodes', () => {
    it('an explicit node by name, DID or identity id (any case)', () => {
      for (const n of ['node1', 'did:firefly:node/node1', ids.node1!.id, ids.node1!.id.toUpperCase()]) {
        expect(resolve([{ identity: 'org1', node: n }]).group.members, n).to.deep.equal([self(), member('org1', 'node1')])
      }
    })

    it('without one, the first registered node of the org', () => {
      expect(resolve([{ identity: 'org4' }]).group.members).to.deep.equal([self(), member('org4', 'node4a')])
    })

    it('an org twice on different nodes is two members', () => {
      const { group } = resolve([{ identity: 'org4', node: 'node4b' }, { identity: 'org4' }])
      expect(group.members).to.deep.equal([self(), member('org4', 'node4b'), member('org4', 'node4a')])
    })

    it('an explicit node owned by an ancestor of a custom identity is accepted', () => {
      expect(resolve([{ identity: 'did:firefly:acme', node: 'node1' }]).group.members).to.deep.equal([{ identity: 'did:firefly:acme', node: ids.node1!.id }, self()])
    })
  })

  describe('the author', () => {
    it('is added (org DID and this node) when no member is on this node, and the members are sorted', () => {
      const { group } = resolve([{ identity: 'org2' }, { identity: 'org1' }])
      expect(group.members).to.deep.equal([self(), member('org1', 'node1'), member('org2', 'node2')])
    })

    it('is not added twice when named, in any form', () => {
      for (const me of [{ identity: 'org0' }, { identity: 'did:firefly:org/org0', node: 'node0' }, { identity: 'org0', node: ids.node0!.id }]) {
        expect(resolve([{ identity: 'org1' }, me]).group.members, JSON.stringify(me)).to.deep.equal([self(), member('org1', 'node1')])
      }
    })

    it('is added beside another identity of its org on this node: receivers look for the author\'s own (org DID, node)', () => {
      const { group } = resolve([{ identity: 'did:firefly:acme0' }, { identity: 'org1' }])
      expect(group.members).to.deep.equal([{ identity: 'did:firefly:acme0', node: ids.node0!.id }, self(), member('org1', 'node1')])
    })

    it('waits (UNAVAILABLE, 503) while this node\'s own org or node is not registered', () => {
      for (const [org, nodeName] of [
        ['orgX', 'node0'],
        ['org0', 'nodeX'],
        ['org1', 'node0'], // node0 is registered, but not under org1
      ] as const) {
        const r = new GroupResolver({ identities: repos.identities, groups: repos.groups, self: localIdentity(org, nodeName, KEY) })
        try {
          r.resolve(NS, { members: [{ identity: 'org2' }] })
          expect.fail('expected UNAVAILABLE')
        } catch (e) {
          expect((e as ParleyError).code, `${org}/${nodeName}`).to.equal('UNAVAILABLE')
          expect(HTTP_STATUS[(e as ParleyError).code]).to.equal(503)
        }
      }
    })
  })

  describe('refusals, each naming the member', () => {
    it('an unknown member: name, DID, org-id alias, another DID method, a string no name is', () => {
      expect(refusal(() => resolve([{ identity: 'org1' }, { identity: 'nobody' }]))).to.match(/^group\.members\[1\]\.identity: no registered org "nobody"/)
      expect(refusal(() => resolve([{ identity: 'did:firefly:org/nobody' }]))).to.match(/group\.members\[0\]\.identity: no registered org "did:firefly:org\/nobody"/)
      expect(refusal(() => resolve([{ identity: `did:firefly:org/${newId()}` }]))).to.match(/no registered org/)
      expect(refusal(() => resolve([{ identity: 'did:web:example.com' }]))).to.match(/is not a FireFly DID/)
      expect(refusal(() => resolve([{ identity: 'not a name' }]))).to.match(/no registered org "not a name"/)
      expect(refusal(() => resolve([{ identity: 'x'.repeat(5000) }]))).to.have.length.below(400)
    })

    it('a node given as the identity', () => {
      expect(refusal(() => resolve([{ identity: 'did:firefly:node/node1' }]))).to.match(/did:firefly:node\/node1 is a node; the identity is the org, and its node goes in group\.members\[0\]\.node/)
      expect(refusal(() => resolve([{ identity: `did:firefly:org/${ids.node1!.id}` }]))).to.match(/is a node/)
    })

    it('an org with no registered node', () => {
      expect(refusal(() => resolve([{ identity: 'org3' }]))).to.match(/^group\.members\[0\]: did:firefly:org\/org3 has no registered node/)
    })

    it('an org without a node yet is resolved once its first node registers, and keeps that node after a second', async () => {
      await org('org7')
      expect(refusal(() => resolve([{ identity: 'org7' }]))).to.match(/org7 has no registered node/)
      await node('node7a', 'org7')
      expect(resolve([{ identity: 'org7' }]).group.members).to.deep.equal([self(), member('org7', 'node7a')])
      await node('node7b', 'org7')
      expect(resolve([{ identity: 'org7' }]).group.members).to.deep.equal([self(), member('org7', 'node7a')])
    })

    it('a node that published no https endpoint and certificate (deliveries to it could never succeed)', async () => {
      await org('org5')
      const bare: Identity = { id: newId<IdentityId>(), did: 'did:firefly:node/node5', type: 'node', parent: ids.org5!.id, namespace: 'svc_system', name: 'node5', messages: { claim: newId<MessageId>() }, created: now() }
      await repos.db.transaction((tx) => repos.identities.insert(tx, bare))
      expect(refusal(() => resolve([{ identity: 'org5' }]))).to.match(/^group\.members\[0\]: node did:firefly:node\/node5 registered no https p2p endpoint and certificate/)
    })

    it('an unknown node, a node another org owns, an org given as the node', () => {
      expect(refusal(() => resolve([{ identity: 'org1', node: 'nodeZ' }]))).to.match(/^group\.members\[0\]\.node: no registered node "nodeZ"/)
      expect(refusal(() => resolve([{ identity: 'org1', node: newId() }]))).to.match(/no registered node/)
      expect(refusal(() => resolve([{ identity: 'org1', node: ids.org1!.id }]))).to.match(/no registered node/)
      expect(refusal(() => resolve([{ identity: 'org1', node: 'did:firefly:org/org1' }]))).to.match(/no registered node/)
      expect(refusal(() => resolve([{ identity: 'org1', node: 'node2' }]))).to.match(/^group\.members\[0\]\.node: did:firefly:node\/node2 belongs to did:firefly:org\/org2, not to did:firefly:org\/org1/)
      expect(refusal(() => resolve([{ identity: 'did:firefly:acme', node: 'node2' }]))).to.match(/belongs to did:firefly:org\/org2, not to did:firefly:acme/)
    })

    it('an empty group', () => {
      expect(refusal(() => resolve([]))).to.equal('group.members must hold at least one member')
    })

    it('a group of only the author', () => {
      for (const me of [[{ identity: 'org0' }], [{ identity: 'did:firefly:org/org0', node: 'did:firefly:node/node0' }]]) {
        expect(refusal(() => resolve(me))).to.match(/^the group holds only the sender \(did:firefly:org\/org0 on did:firefly:node\/node0\)/)
      }
    })

    it('the same member twice, however it is spelled', () => {
      expect(refusal(() => resolve([{ identity: 'org1' }, { identity: 'did:firefly:org/org1', node: 'node1' }]))).to.equal(
        'group.members[1] is the same member as group.members[0]: did:firefly:org/org1 on node did:firefly:node/node1',
      )
      expect(refusal(() => resolve([{ identity: 'org0' }, { identity: 'org1' }, { identity: 'org0' }]))).to.match(/^group\.members\[2\] is the same member as group\.members\[0\]/)
    })

    it('a name that is not a FireFly name, or is a UUID', () => {
      expect(refusal(() => resolve([{ identity: 'org1' }], 'not ok'))).to.match(/^group\.name must be/)
      expect(refusal(() => resolve([{ identity: 'org1' }], newId()))).to.match(/not a UUID/)
      expect(resolve([{ identity: 'org1' }], 'deal-42').group.name).to.equal('deal-42')
    })
  })

  describe('the hash', () => {
    it('the sealing step gives FireFly\'s vector (group_test.go): c2e5a422…', () => {
      const sealed = sealGroup('ok', 'ok', [{ identity: '0x12345', node: '8b5c0d39-925f-4579-9c60-54f3e846ab99' as IdentityId }])
      expect(sealed.hash).to.equal('c2e5a42207ce2b48d67a4682a96f914ec0386acc13615550aa503b0841da8824')
    })

    it('a resolved group hashes as FireFly\'s formula, written out: sha256 of {"namespace","name","members":[sorted {identity,node}]}', () => {
      const { group, isNew } = resolve([{ identity: 'org2' }, { identity: 'org1' }], 'g1')
      const text =
        `{"namespace":"${NS}","name":"g1","members":[` +
        `{"identity":"did:firefly:org/org0","node":"${ids.node0!.id}"},` +
        `{"identity":"did:firefly:org/org1","node":"${ids.node1!.id}"},` +
        `{"identity":"did:firefly:org/org2","node":"${ids.node2!.id}"}]}`
      expect(group.hash).to.equal(sha(text))
      expect(group).to.include({ namespace: NS, name: 'g1' })
      expect(isNew).to.equal(true)
      // The order members are named in does not matter; the namespace and name do.
      expect(resolve([{ identity: 'org1' }, { identity: 'org0' }, { identity: 'org2' }], 'g1').group.hash).to.equal(group.hash)
      expect(resolve([{ identity: 'org1' }, { identity: 'org2' }]).group.hash).to.not.equal(group.hash)
      expect(resolver.resolve('other', { name: 'g1', members: [{ identity: 'org1' }, { identity: 'org2' }] }).group.hash).to.not.equal(group.hash)
    })

    it('a group stored here is answered as stored, not new; a hash names it', async () => {
      const first = resolve([{ identity: 'org2' }], 'stored')
      expect(first.isNew).to.equal(true)
      const message = newId<MessageId>()
      await repos.db.transaction((tx) => repos.groups.insert(tx, { ...first.group, created: '2024-01-02T03:04:05.5Z' as Timestamp, message }))
      const again = resolve([{ identity: 'did:firefly:org/org2', node: 'node2' }], 'stored')
      expect(again.isNew).to.equal(false)
      expect(again.group).to.deep.equal({ ...first.group, created: '2024-01-02T03:04:05.5Z', message })

      for (const text of [first.group.hash, `0x${first.group.hash.toUpperCase()}`]) {
        expect(resolver.resolve(NS, text)).to.deep.equal({ group: again.group, isNew: false })
      }
    })

    it('a hash refused: not a hash, unknown here, of another namespace, of a group this node is not in', async () => {
      expect(refusal(() => resolver.resolve(NS, 'abc'))).to.match(/^group is not a 32-byte hex hash/)
      expect(refusal(() => resolver.resolve(NS, sha('nothing')))).to.match(/^no group [0-9a-f]{64} in namespace default on this node/)
      const { group } = resolve([{ identity: 'org1' }], 'elsewhere')
      await repos.db.transaction((tx) => repos.groups.insert(tx, group))
      expect(refusal(() => resolver.resolve('other', group.hash))).to.match(/^no group .* in namespace other/)
      // A group this node is not in never gets stored by a real member; the resolver still would not send to it.
      const sealed = sealGroup(NS, '', [member('org1', 'node1'), member('org2', 'node2')])
      await repos.db.transaction((tx) => repos.groups.insert(tx, { hash: sealed.hash, namespace: NS, name: '', members: sealed.members, created: now() }))
      expect(refusal(() => resolver.resolve(NS, sealed.hash))).to.match(/is not a member of group/)
    })
  })

  describe('groupinit', () => {
    const author = localIdentity('org0', 'node0', KEY)
    const group: Group = {
      hash: '' as Hash,
      namespace: NS,
      name: 'g',
      members: [
        { identity: 'did:firefly:org/org0', node: '11111111-1111-4111-8111-111111111111' as IdentityId },
        { identity: 'did:firefly:org/org1', node: '22222222-2222-4222-8222-222222222222' as IdentityId },
      ],
      created: '2024-05-06T07:08:09.123456789Z' as Timestamp,
    }
    group.hash = groupHash(group)

    it('carries the group as FireFly\'s json.Marshal(&group) writes it, hash and created included', () => {
      expect(groupinitValue(group)).to.equal(
        `{"namespace":"default","name":"g","members":[{"identity":"did:firefly:org/org0","node":"11111111-1111-4111-8111-111111111111"},` +
          `{"identity":"did:firefly:org/org1","node":"22222222-2222-4222-8222-222222222222"}],"hash":"${group.hash}","created":"2024-05-06T07:08:09.123456789Z"}`,
      )
      // What a receiver does (FireFly's Group.Validate(existing)): the members it reads hash to the hash it reads.
      const back = JSON.parse(groupinitValue(group)) as Group
      expect(groupHash(back)).to.equal(back.hash)
    })

    it('is a ready groupinit message on the group\'s hash as topic, sealed by FireFly\'s formulas', () => {
      const created = '2024-05-06T07:08:10.5Z' as Timestamp
      const { message, data } = groupinitFor(group, author, created)
      const value = groupinitValue(group)
      expect(data).to.deep.include({ validator: 'json', namespace: NS, created, value })
      expect(data.datatype).to.equal(undefined)
      expect(data.hash, 'data hash = sha256(value)').to.equal(sha(value))
      expect(message.data).to.deep.equal([{ id: data.id, hash: data.hash }])
      const h = message.header
      expect(h).to.deep.include({ type: 'groupinit', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: KEY, created, namespace: NS, group: group.hash, tag: TAG_DEFINE_GROUP })
      expect(h.topics).to.deep.equal([group.hash])
      expect(h.datahash, 'datahash = sha256 of the data refs').to.equal(sha(`[{"id":"${data.id}","hash":"${data.hash}"}]`))
      // MessageHeader in Go's field order (pkg/core/message.go), omitempty fields absent.
      const headerText =
        `{"id":"${h.id}","type":"groupinit","txtype":"batch_pin","author":"did:firefly:org/org0","key":"${KEY}","created":"2024-05-06T07:08:10.5Z",` +
        `"namespace":"default","group":"${group.hash}","topics":["${group.hash}"],"tag":"${TAG_DEFINE_GROUP}","datahash":"${h.datahash}"}`
      expect(message.hash).to.equal(sha(headerText))
      expect(message.state).to.equal('ready')
      expect(TAG_DEFINE_GROUP).to.equal('svc_define_group')
    })

    it('each call is a new message and data item; the value and its hash are the same', () => {
      const a = groupinitFor(group, author)
      const b = groupinitFor(group, author)
      expect(a.message.header.id).to.not.equal(b.message.header.id)
      expect(a.data.id).to.not.equal(b.data.id)
      expect(a.data.hash).to.equal(b.data.hash)
    })
  })
})
