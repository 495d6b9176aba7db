import { expect } from 'chai'
import sdk from '@hyperledger/firefly-sdk'
import { sharedNetwork } from '../support/shared-network.js'
import { get, messageReaching, runId, send, waitConfirmedAll } from '../support/api.js'
import { eventLog, subsUrl, sleep, type ApiSubscription } from '../support/events.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** What the SDK hands a listen() callback: an event, or a protocol_error frame (which has no id). */
interface SdkFrame {
  id?: string
  sequence?: number
  type?: string
  reference?: string
  error?: string
  subscription?: { id: string; namespace: string; name: string }
  message?: { header: { id: string } }
}

/** The SDK's socket is private; a test waits for it to be open before sending what its listener must see. */
async function sdkSocketOpen(fws: unknown): Promise<void> {
  const deadline = Date.now() + 15_000
  while ((fws as { socket?: { readyState: number } }).socket?.readyState !== 1) {
    if (Date.now() > deadline) throw new Error('the SDK socket did not open')
    await sleep(50)
  }
  // The start (query or frame) is read before the next frame; leave it a moment.
  await sleep(200)
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

/**
 * FireFly's own Node SDK, unchanged, against the network: what an application written for FireFly sends, this node
 * takes (private sends, broadcasts, groups, messages), and the answers parse into the SDK's types.
 */
describe('FireFly Node SDK against a real 3-member network', function () {
  this.timeout(180_000)
  // The SDK logs each connect and close; the suite's output stays readable without them.
  process.env.FF_SDK_LOG_LEVEL ??= 'ERROR'
  const t = sharedNetwork()
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

  it('listen() ephemeral ({filter: {events}}): on the root /ws by query; every event acknowledged by the SDK (with its subscription) and the next one delivered', async () => {
    const [org0, org1] = members
    const ns2 = `sdkeph-${run}`
    // reconnectDelay: the SDK reconnects 5 s after any close by default; a test wants to see a close as it is.
    const ff1 = new FireFly({ host: org1!.api, namespace: ns2, websocket: { reconnectDelay: 100 } })
    const got: SdkFrame[] = []
    const fws = ff1.listen({ filter: { events: 'message_confirmed' } }, async (_socket, event) => {
      got.push(event as unknown as SdkFrame)
    })
    try {
      await sdkSocketOpen(fws)
      const sent: string[] = []
      for (let i = 0; i < 3; i++) sent.push((await send(org0!, ns2, `se-${run}`, { i })).header.id)
      await waitConfirmedAll(org1!, ns2, sent)
      // Without the SDK's acks (readAhead 0, no autoack: the SDK never sends autoack on this form), only one would come.
      await until('three events through the SDK', () => got.filter((e) => e.type === 'message_confirmed').length >= 3)
      expect(got.filter((e) => e.type === 'protocol_error'), JSON.stringify(got.filter((e) => e.type === 'protocol_error'))).to.deep.equal([])
      expect(got.map((e) => e.reference)).to.deep.equal(sent)
      const log = (await eventLog(org1!, ns2)).filter((e) => e.type === 'message_confirmed')
      expect(got.map((e) => e.id)).to.deep.equal(log.map((e) => e.id))
      for (const e of got) {
        expect(e.message?.header.id).to.equal(e.reference)
        expect(e.subscription?.namespace).to.equal(ns2)
        expect(e.subscription?.name, 'ephemeral: name = id').to.equal(e.subscription?.id)
      }
    } finally {
      fws.close()
    }
  })

  it('replaceSubscription creates, listen() by name delivers and acknowledges, getSubscriptions finds it, replaceSubscription keeps id and offset, deleteSubscription removes it', async () => {
    const [org0, org1] = members
    const ns3 = `sdksub-${run}`
    const ff1 = new FireFly({ host: org1!.api, namespace: ns3, websocket: { reconnectDelay: 100 } })
    const name = `sdk-sub-${run}`
    // 1.2.10 has no createSubscription: PUT (replaceSubscription) creates.
    const created = (await ff1.replaceSubscription({ name, transport: 'websockets', filter: { events: 'message_confirmed' }, options: { firstEvent: 'newest', readAhead: 5 } } as Parameters<typeof ff1.replaceSubscription>[0])) as unknown as ApiSubscription
    expect(created.id).to.match(UUID_RE)
    expect(created.name).to.equal(name)
    expect(created.namespace).to.equal(ns3)
    expect(created.options.readAhead).to.equal(5)
    const listed = (await ff1.getSubscriptions({ name } as Parameters<typeof ff1.getSubscriptions>[0])) as unknown as ApiSubscription[]
    expect(listed.map((x) => x.id)).to.deep.equal([created.id])
    expect(((await ff1.getSubscriptions()) as unknown as ApiSubscription[]).map((x) => x.name)).to.include(name)

    const got: SdkFrame[] = []
    const fws = ff1.listen(name, async (_socket, event) => {
      got.push(event as unknown as SdkFrame)
    })
    try {
      await sdkSocketOpen(fws)
      const sent: string[] = []
      for (let i = 0; i < 3; i++) sent.push((await send(org0!, ns3, `ss-${run}`, { i })).header.id)
      await until('three events by name through the SDK', () => got.filter((e) => e.type === 'message_confirmed').length >= 3)
      expect(got.filter((e) => e.type === 'protocol_error')).to.deep.equal([])
      expect(got.map((e) => e.reference)).to.deep.equal(sent)
      for (const e of got) expect(e.subscription).to.deep.equal({ id: created.id, namespace: ns3, name })
      // The SDK's acks (with `subscription`) moved the stored offset to the last event.
      const last = got[got.length - 1]!.sequence!
      const statusUrl = `${subsUrl(org1!, ns3)}/${created.id}?fetchstatus=true`
      let offset = -1
      const deadline = Date.now() + 30_000
      while (offset !== last && Date.now() < deadline) {
        offset = (await get<ApiSubscription>(statusUrl)).body.status?.currentOffset ?? -1
        if (offset !== last) await sleep(100)
      }
      expect(offset, 'status.currentOffset after the SDK acknowledged everything').to.equal(last)

      // An application sends back what it read, with a change: the same subscription, its offset kept.
      const replaced = (await ff1.replaceSubscription({ ...created, options: { ...created.options, readAhead: 2 } } as unknown as Parameters<typeof ff1.replaceSubscription>[0])) as unknown as ApiSubscription
      expect(replaced.id).to.equal(created.id)
      expect(replaced.options.readAhead).to.equal(2)
      expect(replaced.options.firstEvent).to.equal(created.options.firstEvent)
      expect((await get<ApiSubscription>(statusUrl)).body.status?.currentOffset).to.equal(last)
      // The listening socket carries on with the replaced definition.
      const more = (await send(org0!, ns3, `ss-${run}`, 'more')).header.id
      await until('the event after the replacement', () => got.some((e) => e.reference === more))
    } finally {
      fws.close()
    }

    await ff1.deleteSubscription(created.id)
    expect(await ff1.getSubscriptions({ name } as Parameters<typeof ff1.getSubscriptions>[0])).to.deep.equal([])
    expect((await get(`${subsUrl(org1!, ns3)}/${created.id}`)).status).to.equal(404)
    let failed: unknown
    await ff1.deleteSubscription(created.id).catch((err: unknown) => (failed = err))
    expect(String((failed as Error | undefined)?.message), 'deleting it again is an error (404)').to.match(/not found|404/i)
  })
})
