import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import type { MemberDescription } from '../../network/description.js'
import { waitFor } from '../../network/process.js'
import type { Hash } from '../../node/core/ids.js'
import { sharedNetwork } from '../support/shared-network.js'
import { RogueSender } from '../support/rogue-sender.js'
import { broadcast, get, messageReaching, nsBase, request, runId, send, type ApiEvent, type ApiMessage } from '../support/api.js'
import { downloadBlob, patternBytes, uploadBlob, type ApiBlobData } from '../support/upload.js'

const MiB = 1024 * 1024

/**
 * What a receiving member insists on before it confirms a broadcast: every blob the message names, fetched from
 * shared storage and matching its announced hash, and data that conforms to its datatype there too. Senders that
 * skip their own checks are played by a rogue org registered through the chain like any member.
 */
describe('received data: blobs and datatypes on a real 3-member network', function () {
  this.timeout(180_000)
  const t = sharedNetwork()
  let members: MemberDescription[] = []
  let rogue: RogueSender
  const run = runId()

  before(async () => {
    members = t.net.description.members
    rogue = new RogueSender(t.net.description, `did:firefly:org/rogue${run}`)
    await rogue.start()
    await rogue.registerOrg()
    for (const m of members) {
      await waitFor(`${m.org} to know the rogue org`, async () => (await get(`${m.api}/api/v1/network/organizations/rogue${run}`)).status === 200, { timeoutMs: 30_000, intervalMs: 200 })
    }
  })

  after(async () => {
    await rogue?.stop()
  })

  const messageOn = (m: MemberDescription, ns: string, id: string, state: string): Promise<ApiMessage> => messageReaching(m, ns, id, [state])

  /** Bytes the rogue will announce before it publishes them: their hash and the reference they will have. */
  async function unpublishedBlob(size: number): Promise<{ bytes: Buffer; hash: Hash; ref: string }> {
    const bytes = randomBytes(size)
    return { bytes, hash: createHash('sha256').update(bytes).digest('hex') as Hash, ref: await rogue.referenceOf(bytes) }
  }

  async function batchReceivedOn(m: MemberDescription, ns: string, batchId: string): Promise<void> {
    await waitFor(`${m.org} to receive batch ${batchId}`, async () => (await get<{ state: string }>(`${nsBase(m, ns)}/batches/${batchId}`)).body?.state === 'received', { timeoutMs: 30_000, intervalMs: 200 })
  }

  async function eventsOf(m: MemberDescription, ns: string, type: string): Promise<ApiEvent[]> {
    const r = await get<ApiEvent[]>(`${nsBase(m, ns)}/events?type=${type}&sort=sequence&limit=1000`)
    expect(r.status).to.equal(200)
    return r.body
  }

  it('streams a 200 MiB blob in, publishes it on its first broadcast, and every member confirms it holding the same bytes', async () => {
    const ns = `blob-${run}`
    const [sender] = members
    const bytes = patternBytes(200 * MiB, 7)
    const up = await uploadBlob(sender!, ns, bytes.stream, { filename: 'big.bin', autometa: true })
    expect(up.status, JSON.stringify(up.body)).to.equal(200)
    const expected = bytes.digest()
    expect(up.body.blob?.hash).to.equal(expected)
    expect(up.body.blob?.size).to.equal(200 * MiB)
    expect(up.body.blob?.public, 'held privately until broadcast').to.equal(undefined)

    const r = await broadcast(sender!, ns, { header: { topics: [`blob-${run}`] }, data: [{ id: up.body.id }, { value: { note: 'with a blob' } }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    for (const m of members) {
      const msg = await messageOn(m, ns, r.body.header.id, 'confirmed')
      expect(msg.data.map((d) => d.id)).to.deep.equal(r.body.data.map((d) => d.id))
      const d = await get<ApiBlobData>(`${nsBase(m, ns)}/data/${up.body.id}`)
      expect(d.status).to.equal(200)
      expect(d.body.hash, `${m.org}: data hash`).to.equal(up.body.hash)
      expect(d.body.blob?.hash).to.equal(expected)
      expect(d.body.blob?.public, `${m.org}: the shared-storage reference`).to.match(/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/)
      const blob = await downloadBlob(m, ns, up.body.id)
      expect(blob.status).to.equal(200)
      expect(blob.size, `${m.org}: blob size`).to.equal(200 * MiB)
      expect(blob.sha256, `${m.org}: blob bytes`).to.equal(expected)
      expect(blob.headers.get('x-ff-blob-hash-sha256')).to.equal(expected)
      expect(blob.headers.get('x-ff-blob-size')).to.equal(String(200 * MiB))
    }
    // What was published is the blob itself, fetchable by anyone from shared storage.
    const ref = (await get<ApiBlobData>(`${nsBase(members[1]!, ns)}/data/${up.body.id}`)).body.blob!.public!
    const res = await fetch(`${t.net.description.ipfs.gateway}/ipfs/${ref}`)
    const sha = createHash('sha256')
    for await (const c of res.body!) sha.update(c as Uint8Array)
    expect(sha.digest('hex')).to.equal(expected)
  })

  it('a blob broadcast twice keeps its one shared-storage reference and is confirmed again everywhere', async () => {
    const ns = `again-${run}`
    const [sender] = members
    const up = await uploadBlob(sender!, ns, randomBytes(300_000), { filename: 'again.bin' })
    expect(up.status).to.equal(200)
    const first = await broadcast(sender!, ns, { data: [{ id: up.body.id }] }, { confirm: true })
    expect(first.status, JSON.stringify(first.body)).to.equal(200)
    const ref = (await get<ApiBlobData>(`${nsBase(sender!, ns)}/data/${up.body.id}`)).body.blob!.public
    expect(ref).to.be.a('string')
    const second = await broadcast(sender!, ns, { data: [{ id: up.body.id }] }, { confirm: true })
    expect(second.status).to.equal(200)
    expect((await get<ApiBlobData>(`${nsBase(sender!, ns)}/data/${up.body.id}`)).body.blob!.public).to.equal(ref)
    const other = await messageOn(members[2]!, ns, second.body.header.id, 'confirmed')
    expect(other.data[0]!.id).to.equal(up.body.id)
  })

  it('holds a message and its topic until its blob can be fetched, then confirms both in order', async () => {
    const ns = 'default'
    const topic = `late-blob-${run}`
    const { bytes, hash, ref } = await unpublishedBlob(2 * MiB)
    const batch = rogue.build(ns, [
      { topic, value: { i: 1 }, blob: { hash, size: bytes.length, name: 'late.bin', public: ref } },
      { topic, value: { i: 2 } },
    ])
    await rogue.publish(batch)
    const [withBlob, after] = batch.messages.map((m) => m.header.id)
    for (const m of members) await batchReceivedOn(m, ns, batch.id)
    // The blob is not in shared storage yet: nothing on the topic may be confirmed.
    await new Promise((r) => setTimeout(r, 1500))
    for (const m of members) {
      expect((await get<ApiMessage>(`${nsBase(m, ns)}/messages/${withBlob}`)).body.state, m.org).to.equal('pending')
      expect((await get<ApiMessage>(`${nsBase(m, ns)}/messages/${after}`)).body.state, m.org).to.equal('pending')
    }
    expect(await rogue.upload(bytes)).to.equal(ref)
    for (const m of members) {
      await messageOn(m, ns, after!, 'confirmed')
      const order = (await eventsOf(m, ns, 'message_confirmed')).map((e) => e.reference).filter((id) => id === withBlob || id === after)
      expect(order, `${m.org}: confirmation order`).to.deep.equal([withBlob, after])
      const blob = await downloadBlob(m, ns, batch.data[0]!.id)
      expect(blob.sha256).to.equal(hash)
    }
  })

  it('a receiver SIGKILLed while it waits for a blob fetches it after its restart, then confirms', async () => {
    const ns = 'default'
    const topic = `restart-blob-${run}`
    const { bytes, hash, ref } = await unpublishedBlob(3 * MiB)
    const batch = rogue.build(ns, [{ topic, value: { i: 1 }, blob: { hash, size: bytes.length, name: 'r.bin', public: ref } }])
    await rogue.publish(batch)
    const id = batch.messages[0]!.header.id
    const victim = members[2]!
    await batchReceivedOn(victim, ns, batch.id)
    await t.net.kill(victim.node, 'SIGKILL')
    // The blob appears while the receiver is down; what it still wants must have survived in its database.
    expect(await rogue.upload(bytes)).to.equal(ref)
    await t.net.restart(victim.node)
    await messageOn(victim, ns, id, 'confirmed')
    const blob = await downloadBlob(victim, ns, batch.data[0]!.id)
    expect(blob.sha256).to.equal(hash)
  })

  it('rejects a message whose published blob does not match its announced hash, and keeps its topic moving', async () => {
    const ns = 'default'
    const topic = `bad-blob-${run}`
    const bytes = randomBytes(100_000)
    const ref = await rogue.upload(bytes)
    const lie = createHash('sha256').update('something else').digest('hex') as Hash
    const batch = rogue.build(ns, [
      { topic, value: { i: 1 }, blob: { hash: lie, size: bytes.length, name: 'lie.bin', public: ref } },
      { topic, value: { i: 2 } },
    ])
    await rogue.publish(batch)
    const [bad, good] = batch.messages.map((m) => m.header.id)
    for (const m of members) {
      const rejected = await messageOn(m, ns, bad!, 'rejected')
      expect(rejected.rejectReason, m.org).to.match(/does not match/)
      await messageOn(m, ns, good!, 'confirmed')
      expect((await eventsOf(m, ns, 'message_rejected')).map((e) => e.reference)).to.include(bad)
      expect((await get(`${nsBase(m, ns)}/data/${batch.data[0]!.id}/blob`)).status, 'no blob is served').to.equal(404)
    }
    // Nor can a member pass the unobtainable blob on in a message of its own.
    const again = await broadcast(members[0]!, ns, { data: [{ id: batch.data[0]!.id }] })
    expect(again.status).to.equal(400)
    expect((again.body as unknown as { error: string }).error).to.match(/cannot be obtained/)
  })

  it('a blob every member already holds, announced at a reference that does not serve it, is rejected everywhere alike', async () => {
    const ns = 'default'
    const bytes = randomBytes(64 * 1024)
    const up = await uploadBlob(members[0]!, ns, bytes, { filename: 'held.bin' })
    const honest = await broadcast(members[0]!, ns, { data: [{ id: up.body.id }] })
    expect(honest.status).to.equal(202)
    for (const m of members) await messageOn(m, ns, honest.body.header.id, 'confirmed')
    // Every member now holds the bytes; the rogue points at other content under the same announced hash.
    const elsewhere = await rogue.upload(randomBytes(64 * 1024))
    const batch = rogue.build(ns, [{ topic: `held-${run}`, value: { i: 1 }, blob: { hash: up.body.blob!.hash as Hash, size: bytes.length, name: 'held.bin', public: elsewhere } }])
    await rogue.publish(batch)
    for (const m of members) {
      const rejected = await messageOn(m, ns, batch.messages[0]!.header.id, 'rejected')
      expect(rejected.rejectReason, m.org).to.match(/does not match/)
    }
  })

  it('a receiving member rejects data that fails its datatype (message_rejected), and later messages on the topic still confirm', async () => {
    const ns = 'default'
    const topic = `typed-${run}`
    const datatype = { name: `widget${run}`, version: '1.0.0' }
    const def = await request<ApiMessage>('POST', `${nsBase(members[0]!, ns)}/datatypes?confirm=true`, {
      ...datatype,
      value: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { size: { type: 'integer', minimum: 1 } }, required: ['size'] },
    })
    expect(def.status, JSON.stringify(def.body)).to.equal(200)
    for (const m of members) {
      await waitFor(`${m.org} to hold the datatype`, async () => (await get<unknown[]>(`${nsBase(m, ns)}/datatypes?name=${datatype.name}`)).body.length === 1, { timeoutMs: 30_000, intervalMs: 200 })
    }
    // An honest member refuses it at send time...
    const refused = await broadcast(members[1]!, ns, { header: { topics: [topic] }, data: [{ datatype, value: { size: 'big' } }] })
    expect(refused.status).to.equal(400)
    // ...the rogue skips that check; every member checks again on receipt.
    const batch = rogue.build(ns, [
      { topic, value: { size: 'big' }, datatype },
      { topic, value: { size: 3 }, datatype },
    ])
    await rogue.publish(batch)
    const [bad, good] = batch.messages.map((m) => m.header.id)
    const next = await send(members[1]!, ns, topic, { plain: true })
    for (const m of members) {
      const rejected = await messageOn(m, ns, bad!, 'rejected')
      expect(rejected.rejectReason, m.org).to.match(/size/)
      expect((await eventsOf(m, ns, 'message_rejected')).map((e) => e.reference), m.org).to.include(bad)
      expect((await eventsOf(m, ns, 'message_confirmed')).map((e) => e.reference), m.org).not.to.include(bad)
      await messageOn(m, ns, good!, 'confirmed')
      await messageOn(m, ns, next.header.id, 'confirmed')
    }
  })
})
