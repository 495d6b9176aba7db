import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import type { MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { waitFor } from '../../network/process.js'
import { sha256Hex } from '../../node/core/hashes.js'
import { sharedNetwork } from '../support/shared-network.js'
import { RogueSender, type Published } from '../support/rogue-sender.js'
import { broadcast, get, nsBase, runId, send, type ApiBatch, type ApiEvent, type ApiMessage } from '../support/api.js'

describe('a tampered broadcast batch pinned by a test-only sender', function () {
  this.timeout(120_000)
  const t = sharedNetwork()
  let rogue: RogueSender | undefined
  let members: MemberDescription[] = []
  const run = runId()
  const ns = `tamper-${run}`
  const topic = {
    value: `tv-${run}`,
    header: `th-${run}`,
    manifest: `tm-${run}`,
    garbage: `tg-${run}`,
    elsewhere: `te-${run}`,
    control: `tc-${run}`,
    free: `tf-${run}`,
  }
  /** Each tampered batch: what was published, the message it carried, and what the refusal must say. */
  const tampered: { what: string; pub: Published; messageId: string; reason: RegExp }[] = []
  let control: { pub: Published; messageId: string } | undefined

  before(async () => {
    members = t.net.description.members
    rogue = new RogueSender(t.net.description, `did:firefly:org/rogue-${run}`)
    await rogue.start()

    // 1. A data value changed after it was hashed: the manifest (ids and hashes) still matches the pin.
    {
      const b = rogue.build(ns, [{ topic: topic.value, value: { amount: 100 } }])
      b.data[0]!.value = '{"amount":1000000}'
      tampered.push({ what: 'data value', pub: await rogue.publish(b), messageId: b.messages[0]!.header.id, reason: new RegExp(`data ${b.data[0]!.id} hashes to [0-9a-f]{64}, not ${b.data[0]!.hash}`) })
    }
    // 2. A message header changed after it was hashed.
    {
      const b = rogue.build(ns, [{ topic: topic.header, value: 'hello', tag: 'honest' }])
      b.messages[0]!.header.tag = 'forged'
      const m = b.messages[0]!
      tampered.push({ what: 'message header', pub: await rogue.publish(b), messageId: m.header.id, reason: new RegExp(`message ${m.header.id} header hashes to [0-9a-f]{64}, not ${m.hash}`) })
    }
    // 3. A self-consistent batch pinned with another batch hash.
    {
      const b = rogue.build(ns, [{ topic: topic.manifest, value: 'pinned under a false hash' }])
      const pub = await rogue.publish(b, { pinnedHash: sha256Hex(`not the manifest ${run}`) })
      tampered.push({ what: 'manifest hash', pub, messageId: b.messages[0]!.header.id, reason: new RegExp(`manifest hash ${b.hash} differs from the pinned batch hash ${pub.pinnedHash}`) })
    }
    // 4. Something that is not a batch at all behind the pin.
    {
      const b = rogue.build(ns, [{ topic: topic.garbage, value: 1 }])
      tampered.push({ what: 'garbage payload', pub: await rogue.publish(b, { text: '{"hello":"world"}' }), messageId: b.messages[0]!.header.id, reason: /malformed batch/ })
    }
    // 5. Data placed in another namespace than its batch's (the data hash does not cover the namespace).
    {
      const b = rogue.build(ns, [{ topic: topic.elsewhere, value: 'planted' }])
      b.data[0]!.namespace = `${ns}-victim`
      tampered.push({ what: 'data namespace', pub: await rogue.publish(b), messageId: b.messages[0]!.header.id, reason: new RegExp(`data ${b.data[0]!.id} is in namespace ${ns}-victim, the batch in ${ns}`) })
    }
    // The control: the same sender, an untampered batch. It verifies (so the refusals above are the tampering's).
    {
      const b = rogue.build(ns, [{ topic: topic.control, value: 'untouched' }])
      control = { pub: await rogue.publish(b), messageId: b.messages[0]!.header.id }
    }
  })

  after(async () => {
    await rogue?.stop()
  })

  async function batchOn(m: MemberDescription, id: string, state: ApiBatch['state']): Promise<ApiBatch> {
    let last: ApiBatch | undefined
    await waitFor(`${m.org} to hold batch ${id} as ${state} (has ${last?.state})`, async () => {
      const r = await get<ApiBatch>(`${nsBase(m, ns)}/batches/${id}`)
      last = r.status === 200 ? r.body : undefined
      return last?.state === state
    }, { timeoutMs: 30_000, intervalMs: 150 })
    return last!
  }

  it('every member records each tampered batch as refused, with the mismatch as the reason', async () => {
    for (const m of members) {
      for (const x of tampered) {
        const b = await batchOn(m, x.pub.batchId, 'refused')
        expect(b.reason, `${m.org}, ${x.what}`).to.match(x.reason)
        expect(b.payloadRef, `${m.org}, ${x.what}`).to.equal(x.pub.payloadRef)
        expect(b.key, `${m.org}, ${x.what}: the key that pinned it`).to.equal(rogue!.key)
      }
      const planted = await get<unknown[]>(`${nsBase(m, `${ns}-victim`)}/data`)
      expect(planted.body, `${m.org}: nothing planted in another namespace`).to.deep.equal([])
    }
  })

  it('the untampered batch of the same sender verifies and is stored on every member', async () => {
    for (const m of members) {
      const b = await batchOn(m, control!.pub.batchId, 'received')
      expect(b.reason).to.equal(undefined)
      expect(b.manifest.messages.map((e) => e.id)).to.deep.equal([control!.messageId])
      // Its signer is nobody the network knows and no claim for its author came before it: stored, and rejected.
      let msg: ApiMessage | undefined
      await waitFor(`${m.org} to settle the control message`, async () => {
        const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${control!.messageId}`)
        msg = r.status === 200 ? r.body : undefined
        return msg?.state === 'rejected'
      }, { timeoutMs: 30_000, intervalMs: 150 })
      expect(msg!.rejectReason, m.org).to.contain('no registered identity')
    }
  })

  it('a tampered message is never stored nor confirmed anywhere, and its refused pins hold no topic', async () => {
    const org1 = members[1]!
    // On the topics of refused batches: their pins were used when the payload was refused, on every member alike.
    const afterA = await send(org1, ns, topic.value, 'after a refused batch')
    const afterB = await send(org1, ns, topic.manifest, 'after another refused batch')
    const free = await broadcast(org1, ns, { header: { topics: [topic.free] }, data: [{ value: 'other topic' }] }, { confirm: true })
    expect(free.status).to.equal(200)
    expect(free.body.state).to.equal('confirmed')

    for (const m of members) {
      for (const x of [afterA, afterB, free.body]) {
        await waitFor(`${m.org} to confirm ${x.header.id}`, async () => {
          const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${x.header.id}`)
          return r.status === 200 && r.body.state === 'confirmed'
        }, { timeoutMs: 30_000, intervalMs: 150 })
      }
    }
    // Checked after every member confirmed the later messages, which were pinned after everything above.
    for (const m of members) {
      for (const x of tampered) {
        const r = await get<{ error: string }>(`${nsBase(m, ns)}/messages/${x.messageId}`)
        expect(r.status, `${m.org}: the message of the ${x.what} batch`).to.equal(404)
        const ev = await get<ApiEvent[]>(`${nsBase(m, ns)}/events?reference=${x.messageId}`)
        expect(ev.body, `${m.org}: no event for the message of the ${x.what} batch`).to.deep.equal([])
      }
      const confirmed = (await get<ApiEvent[]>(`${nsBase(m, ns)}/events?type=message_confirmed&limit=1000`)).body.map((e) => e.reference)
      expect([...confirmed].sort(), m.org).to.deep.equal([afterA.header.id, afterB.header.id, free.body.header.id].sort())
    }
    const pending = await get<ApiMessage[]>(`${nsBase(org1, ns)}/messages?pending=true`)
    expect(pending.body).to.deep.equal([])
    // pending=false selects confirmed messages: not the rejected control.
    const done = await get<ApiMessage[]>(`${nsBase(org1, ns)}/messages?pending=false`)
    expect(done.body.map((x) => x.header.id).sort()).to.deep.equal([afterA.header.id, afterB.header.id, free.body.header.id].sort())
  })

  it("a batch reusing the ids of another member's message and data, with other content, takes nothing from them", async () => {
    const org1 = members[1]!
    const sent = { pay: 10 }
    const x1 = await send(org1, ns, `x1-${run}`, sent)
    const x2 = await send(org1, ns, `x2-${run}`, 'the real second message')
    // The sender dies before it pins; the rogue learns the ids first and pins its own batches under them.
    await t.net.kill('node1', 'SIGKILL')
    const forgedData = rogue!.build(ns, [{ topic: `y1-${run}`, value: { pay: 10000 }, dataId: x1.data[0]!.id }])
    const forgedMessage = rogue!.build(ns, [{ topic: `y2-${run}`, value: 'a forged second message', messageId: x2.header.id }])
    const forged = [await rogue!.publish(forgedData), await rogue!.publish(forgedMessage)]
    for (const m of [members[0]!, members[2]!]) for (const f of forged) await batchOn(m, f.batchId, 'received')

    await t.net.restart('node1')
    // The sender settles its own messages: confirmed, as it sent them.
    for (const x of [x1, x2]) {
      let got: ApiMessage | undefined
      await waitFor(`${org1.org} to settle ${x.header.id}`, async () => {
        got = (await get<ApiMessage>(`${nsBase(org1, ns)}/messages/${x.header.id}?fetchdata=true`)).body
        return got.state === 'confirmed' || got.state === 'rejected'
      }, { timeoutMs: 30_000, intervalMs: 150 })
      expect(got!.state, `${org1.org}: its own message ${x.header.id} (${got!.rejectReason ?? ''})`).to.equal('confirmed')
      expect(got!.hash).to.equal(x.hash)
      expect(got!.data.map((d) => d.value)).to.deep.equal([x === x1 ? sent : 'the real second message'])
    }
    const batchId = (await get<ApiMessage>(`${nsBase(org1, ns)}/messages/${x1.header.id}`)).body.batch!
    // The other members held the forgeries first: the sender's batch is stored beside them, and its messages, pinned by
    // their author's key, are confirmed with their own content (the forgeries, signed by nobody's key, take no id).
    for (const m of [members[0]!, members[2]!]) {
      await batchOn(m, batchId, 'received')
      for (const x of [x1, x2]) {
        let got: ApiMessage | undefined
        await waitFor(`${m.org} to confirm ${x.header.id}`, async () => {
          got = (await get<ApiMessage>(`${nsBase(m, ns)}/messages/${x.header.id}?fetchdata=true`)).body
          return got.state === 'confirmed'
        }, { timeoutMs: 30_000, intervalMs: 150 })
        expect(got!.hash, `${m.org}: confirmed content of ${x.header.id}`).to.equal(x.hash)
        expect(got!.data.map((d) => d.hash), `${m.org}: confirmed data of ${x.header.id}`).to.deep.equal(x.data.map((d) => d.hash))
        expect(got!.data.map((d) => d.value)).to.deep.equal([x === x1 ? sent : 'the real second message'])
      }
      // What was rejected is the rogue's own messages (its key is nobody's), never a message of the real sender: each
      // rejection is about the message its verdict decided, which the event carries.
      const rejected = await get<ApiEvent[]>(`${nsBase(m, ns)}/events?type=message_rejected&limit=1000&fetchreferences=true`)
      for (const e of rejected.body) expect(e.message?.header.key, `${m.org}: rejected ${e.reference}`).to.equal(rogue!.key)
      const shared = (await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?id=${x2.header.id}`)).body
      expect(shared.map((x) => [x.hash === x2.hash ? 'real' : 'forged', x.state]).sort()).to.deep.equal([
        ['forged', 'rejected'],
        ['real', 'confirmed'],
      ])
    }
  })

  it('a restarted member keeps the refusals, and fetches nothing again', async () => {
    const m = members[2]!
    await t.net.kill('node2', 'SIGKILL')
    await t.net.restart('node2')
    const after = await send(members[0]!, ns, `${topic.free}-3`, 'after the restart')
    await waitFor(`${m.org} to confirm a new broadcast after its restart`, async () => {
      const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${after.header.id}`)
      return r.status === 200 && r.body.state === 'confirmed'
    }, { timeoutMs: 30_000, intervalMs: 150 })
    for (const x of tampered) {
      const b = await get<ApiBatch>(`${nsBase(m, ns)}/batches/${x.pub.batchId}`)
      expect(b.body.state, x.what).to.equal('refused')
      expect((await get(`${nsBase(m, ns)}/messages/${x.messageId}`)).status, x.what).to.equal(404)
      // The log (appended across runs) names each refusal once: the restart did not download and judge it again.
      const log = readFileSync(layout(t.dir).log('node2'), 'utf8')
      expect(log.split('\n').filter((l) => l.includes(`batch ${x.pub.batchId} pinned by ${rogue!.key} refused`)), x.what).to.have.length(1)
    }
  })
})
