import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { messageLimitProblem } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { compileDatatypeSchema } from '../../../../node/data/validation-schema.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { MAX_DATA_PER_MESSAGE, MAX_TOPICS_PER_MESSAGE, type Data, type Header, type Message } from '../../../../node/model/index.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'

const KEY = '0x' + 'aa'.repeat(20)
const AUTHOR = 'did:firefly:org/orgA'
const SCHEMA = '{"type":"array","items":{"type":"integer","maximum":100}}'

/** On receipt: per-message limits reject the message (not its batch), and costly checks wait for the worker. */
describe('validation on receipt, through the aggregator', function () {
  this.timeout(60_000)
  let dir: string
  let repos: Repos
  let agg: Aggregator
  let validator: DataValidatorImpl

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-receipt-'))
    repos = await openRepos(dir)
    const compiled = compileDatatypeSchema(SCHEMA)
    validator = new DataValidatorImpl((_ns, name) => (name === 'ints' ? { check: () => undefined, orderedAt: 0, schema: { compiled, raw: SCHEMA } } : undefined), {
      settled: () => agg.blobSettled(),
    })
    agg = new Aggregator({ ...repos, validator, definitions: [], log: () => {}, onOutcome: () => {} })
    await registerOrg(repos.db, repos.identities, 'orgA', KEY)
  })
  afterEach(async () => {
    await agg.stop()
    await validator.stop()
    await repos.db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** One message per entry: its topics and its data values (each under datatype `ints` when `typed`). */
  function batchOf(messages: { topics: string[]; values: string[]; typed?: boolean }[]) {
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const data: Data[] = []
    const msgs: Message[] = messages.map((m) => {
      const items = m.values.map((valueRaw): Data => ({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw }), created: now(), value: valueRaw, ...(m.typed ? { datatype: { name: 'ints', version: '1' } } : {}) }))
      data.push(...items)
      const refs = items.map((d) => ({ id: d.id, hash: d.hash }))
      const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: AUTHOR, key: KEY, created: now(), namespace: 'default', topics: m.topics, datahash: dataRefsHash(refs) }
      return { header, hash: messageHash(header), state: 'pending', data: refs }
    })
    const { manifest, hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: msgs, data })
    return { id, txId, manifest, hash, messages: msgs, data }
  }

  async function arrive(b: ReturnType<typeof batchOf>): Promise<void> {
    const { db, batches, data, messages, pins } = repos
    await db.transaction((tx) => {
      batches.insert(tx, { id: b.id, type: 'broadcast', namespace: 'default', author: AUTHOR, key: KEY, created: now(), hash: b.hash, manifest: b.manifest, txId: b.txId, state: 'received', local: false })
      for (const d of b.data) data.insert(tx, d, false)
      for (const m of b.messages) messages.insert(tx, m, false)
      let index = 0
      for (const m of b.messages) for (const t of m.header.topics) pins.insert(tx, { batchId: b.id, batchHash: b.hash, index: index++, hash: broadcastContext(t), masked: false, signer: KEY, eventId: newId() })
    })
  }

  const stateOf = (m: Message) => {
    const got = repos.messages.getMany([m.header.id]).get(m.header.id)!
    return got.state === 'rejected' ? `rejected: ${got.rejectReason}` : got.state
  }

  async function settled(...ms: Message[]): Promise<void> {
    const deadline = Date.now() + 30_000
    while (ms.some((m) => !/^(confirmed|rejected)/.test(stateOf(m)))) {
      if (Date.now() > deadline) throw new Error(`not settled: ${ms.map(stateOf).join(', ')}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  it('states the per-message limits once, for every receiver', () => {
    const m = (topics: number, data: number) => ({ header: { topics: Array.from({ length: topics }, (_, i) => `t${i}`) }, data: new Array<unknown>(data).fill(0) })
    expect(messageLimitProblem(m(MAX_TOPICS_PER_MESSAGE, MAX_DATA_PER_MESSAGE))).to.equal(undefined)
    expect(messageLimitProblem(m(1, MAX_DATA_PER_MESSAGE + 1))).to.equal(`the message carries ${MAX_DATA_PER_MESSAGE + 1} data items; a message may carry at most ${MAX_DATA_PER_MESSAGE}`)
    expect(messageLimitProblem(m(MAX_TOPICS_PER_MESSAGE + 1, 1))).to.equal(`the message names ${MAX_TOPICS_PER_MESSAGE + 1} topics; a message may name at most ${MAX_TOPICS_PER_MESSAGE}`)
  })

  it('rejects a message over the data or topic limit as a message, and its topics move on', async () => {
    const tooManyTopics = Array.from({ length: MAX_TOPICS_PER_MESSAGE + 1 }, (_, i) => (i === 0 ? 't1' : `x${i}`))
    const b = batchOf([
      { topics: ['t1'], values: Array.from({ length: MAX_DATA_PER_MESSAGE + 1 }, (_, i) => String(i)) },
      { topics: tooManyTopics, values: ['1'] },
      { topics: ['t1'], values: ['"after"'] },
    ])
    await arrive(b)
    agg.start()
    await settled(...b.messages)
    expect(b.messages.map(stateOf)).to.deep.equal([
      `rejected: the message carries ${MAX_DATA_PER_MESSAGE + 1} data items; a message may carry at most ${MAX_DATA_PER_MESSAGE}`,
      `rejected: the message names ${MAX_TOPICS_PER_MESSAGE + 1} topics; a message may name at most ${MAX_TOPICS_PER_MESSAGE}`,
      'confirmed',
    ])
    expect(repos.pins.waiting()).to.deep.equal([])
  })

  it('waits for costly checks from the worker, in topic order, and reaches the inline verdicts', async () => {
    const large = (bad: boolean) => JSON.stringify([...Array.from({ length: 50_000 }, (_, i) => i % 100), bad ? 101 : 1])
    const b = batchOf([
      { topics: ['t1'], values: [large(false)], typed: true },
      { topics: ['t1'], values: ['[1,2]'], typed: true },
      { topics: ['t1'], values: [large(true)], typed: true },
      { topics: ['t1'], values: ['[500]'], typed: true },
      { topics: ['t2'], values: ['"free"'] },
    ])
    await arrive(b)
    agg.start()
    await settled(...b.messages)
    expect(b.messages.map(stateOf)).to.deep.equal([
      'confirmed',
      'confirmed',
      `rejected: data ${b.data[2]!.id}: data does not conform to datatype ints/1: /50000 must be <= 100`,
      `rejected: data ${b.data[3]!.id}: data does not conform to datatype ints/1: /0 must be <= 100`,
      'confirmed',
    ])
    // Nothing overtook on t1.
    const confirmed = repos.events.list({ namespace: 'default', type: 'message_confirmed', limit: 10, skip: 0, ascending: true }).map((e) => e.reference)
    expect(confirmed.indexOf(b.messages[0]!.header.id)).to.be.below(confirmed.indexOf(b.messages[1]!.header.id))
  })
})
