import { expect } from 'chai'
import { join } from 'node:path'
import { PrivateChecks } from '../../../../node/aggregator/private-check.js'
import { formatPin, messageHash, privatePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { NextPinsRepo } from '../../../../node/db/repos/nextpins.js'
import { nodeDid, orgDid, SYSTEM_NAMESPACE, type BatchRecord, type Header, type Message, type Pin } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { groupOf, registeredOrgs } from '../../../support/aggregator-member.js'
import { openRepos, type Repos } from '../../../support/repos.js'

/**
 * The private ordering checks on one message, over a real database: what each rejection says (no group, pins that do
 * not fit its topics, a pin that is no pin or not the topic's, an author outside the group or on another node), and
 * that a well-formed message at the next nonce passes. The receiver refuses most of these batches before they are
 * stored; the checks hold on their own for whatever reaches them.
 */
describe('private checks: what a private message is rejected for', () => {
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!])
  let repos: Repos
  let checks: PrivateChecks

  before(async () => {
    repos = await openRepos(join(await temp.make('parley-private-checks-'), 'db'))
    await repos.db.transaction((tx) => {
      for (const o of [org0!, org1!, org2!]) {
        repos.identities.insert(tx, { id: o.orgId, did: orgDid(o.org), type: 'org', namespace: SYSTEM_NAMESPACE, name: o.org, messages: { claim: newId<MessageId>() }, created: now() })
        repos.identities.insert(tx, { id: o.nodeId, did: nodeDid(o.node), type: 'node', parent: o.orgId, namespace: SYSTEM_NAMESPACE, name: o.node, messages: { claim: newId<MessageId>() }, created: now() })
      }
      repos.groups.insert(tx, group)
    })
    checks = new PrivateChecks({ nextpins: new NextPinsRepo(repos.db), pins: repos.pins, groups: repos.groups, identities: repos.identities })
  })
  after(async () => {
    await repos.db.close()
    await temp.cleanup()
  })

  const author = orgDid('org0')
  const pinOf = (topic: string, nonce: number, g: Hash = group.hash, a = author) => formatPin(privatePin(topic, g, a, nonce), nonce)
  function message(fields: Partial<Header> = {}, pins: string[] | null = [pinOf('orders', 0)]): Message {
    const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author, key: org0!.key, created: now(), namespace: 'default', group: group.hash, topics: ['orders'], datahash: 'd'.repeat(64) as Hash, ...fields }
    return { header, hash: messageHash(header), state: 'pending', data: [], ...(pins ? { pins } : {}) }
  }
  const batch = (fields: Partial<BatchRecord> = {}): BatchRecord => ({ id: newId<BatchId>(), type: 'private', namespace: 'default', author, key: org0!.key, group: group.hash, node: nodeDid('node0'), created: now(), hash: 'b'.repeat(64) as Hash, manifest: '{}', txId: newId<TxId>(), state: 'received', local: false, ...fields })
  /** The pins on chain for `m`'s topics, as its own pins say. */
  const onChain = (m: Message): Pin[] =>
    (m.pins ?? []).map((p, i) => ({ seq: 100 + i, batchId: newId<BatchId>(), batchHash: 'b'.repeat(64) as Hash, index: i, hash: p.split(':')[0] as Hash, masked: true, signer: org0!.key, eventId: 'e', dispatched: false, repeated: false }))
  const verdict = (m: Message, b: BatchRecord = batch(), chain: (Pin | undefined)[] = onChain(m)) => {
    const out = checks.check(undefined, m, b, chain)
    return out.kind === 'ok' ? 'ok' : out.kind === 'reject' ? out.reason : out.wait
  }

  it('passes a message at the next nonce of its topic, sent by its author’s node in the group', () => {
    expect(verdict(message())).to.equal('ok')
  })

  it('rejects a message naming no group, or with pins that do not fit its topics', () => {
    const groupless = message({ group: undefined })
    expect(verdict(groupless)).to.equal(`private message ${groupless.header.id} names no group`)
    expect(verdict(message({}, null))).to.equal('it carries 0 pins for 1 topics')
    expect(verdict(message({ topics: ['orders', 'invoices'] }))).to.equal('it carries 1 pins for 2 topics')
  })

  it('rejects a pin that is no pin, or not the pin of its topic, author and group', () => {
    const m = message({}, ['not-a-pin'])
    expect(verdict(m, batch(), [undefined])).to.equal('not a pin (hash:nonce): "not-a-pin"')
    const other = pinOf('invoices', 0)
    expect(verdict(message({}, [other]))).to.equal(`pin 0 (${other.split(':')[0]}) is not the pin of topic orders at nonce 0 for ${author} in its group`)
    // Its pin not read from the chain yet: it waits, as its topic's.
    expect(verdict(message(), batch(), [undefined])).to.deep.equal({ reason: 'pin', topic: 'orders' })
  })

  it('rejects an author outside the group, or one sent from a node that is not the author’s there', () => {
    const outsider = orgDid('org2')
    const m = message({ author: outsider, key: org2!.key }, [pinOf('orders', 0, group.hash, outsider)])
    expect(verdict(m, batch({ author: outsider, node: nodeDid('node2') }))).to.equal(`its author ${outsider} on ${nodeDid('node2')} is not a member of group ${group.hash}`)
    expect(verdict(m, batch({ author: outsider, node: undefined }))).to.equal(`its author ${outsider} is not a member of group ${group.hash}`)
    expect(verdict(message(), batch({ node: nodeDid('node1') }))).to.equal(`its author ${author} on ${nodeDid('node1')} is not a member of group ${group.hash}`)
    // A batch naming no node is taken from any node of the author in the group.
    expect(verdict(message(), batch({ node: undefined }))).to.equal('ok')
  })
})
