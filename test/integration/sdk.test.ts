import { expect } from 'chai'
import sdk from '@hyperledger/firefly-sdk'
import { suiteNetwork } from '../support/network.js'
import { messageReaching, runId } from '../support/api.js'

/**
 * FireFly's own Node SDK, unchanged, against the network: what an application written for FireFly sends, this node
 * takes (private sends, broadcasts, groups, messages), and the answers parse into the SDK's types.
 */
describe('FireFly Node SDK against a real 3-member network', function () {
  this.timeout(180_000)
  const t = suiteNetwork('sdk')
  const { members } = t
  const run = runId()
  const ns = `sdk-${run}`
  // The package is CommonJS with `exports.default`: imported from ESM, the class is the module's `default`.
  type FireFlyClass = typeof sdk.default
  const FireFly: FireFlyClass = (sdk as unknown as { default?: FireFlyClass }).default ?? (sdk as unknown as FireFlyClass)

  it('sendPrivateMessage: 202 private to the group, confirmed on the recipient; getGroup and getMessage answer', async () => {
    const [org0, org1, org2] = members
    const ff0 = new FireFly({ host: org0!.api, namespace: ns })
    const ff1 = new FireFly({ host: org1!.api, namespace: ns })
    const sent = await ff0.sendPrivateMessage({ header: { tag: 'sdk', topics: [`sdk-${run}`] }, group: { members: [{ identity: org1!.org }] }, data: [{ value: { from: 'sdk' } }] })
    expect(sent.header.type).to.equal('private')
    expect(sent.header.group).to.match(/^[0-9a-f]{64}$/)
    await messageReaching(org1!, ns, sent.header.id!, ['confirmed'], 60_000)
    const got = await ff1.getMessage(sent.header.id!)
    expect(got?.header.id).to.equal(sent.header.id)
    expect(got?.state).to.equal('confirmed')
    const group = await ff1.getGroup(sent.header.group!)
    expect(group?.hash).to.equal(sent.header.group)
    expect((group?.members ?? []).map((m: { identity?: string }) => m.identity).sort()).to.deep.equal([org0!.did, org1!.did].sort())
    // A member outside the group: the SDK's getters answer undefined (404).
    const ff2 = new FireFly({ host: org2!.api, namespace: ns })
    expect(await ff2.getMessage(sent.header.id!)).to.equal(undefined)
  })

  it('sendPrivateMessage with confirm: answered once confirmed locally; sendBroadcast confirms on every member', async () => {
    const [org0, org1, org2] = members
    const ff0 = new FireFly({ host: org0!.api, namespace: ns })
    const confirmed = await ff0.sendPrivateMessage({ group: { members: [{ identity: org1!.org }] }, data: [{ value: 'sync' }] }, { confirm: true })
    expect(confirmed.state).to.equal('confirmed')
    const b = await ff0.sendBroadcast({ header: { tag: 'sdk' }, data: [{ value: { hello: 'all' } }] })
    expect(b.header.type).to.equal('broadcast')
    for (const m of [org1!, org2!]) await messageReaching(m, ns, b.header.id!, ['confirmed'], 60_000)
  })
})
