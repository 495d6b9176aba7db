import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { batchPinInterface } from '../../../../node/chain/abi.js'
import { createChain } from '../../../../node/chain/chain.js'
import type { Chain, PinBatchRequest } from '../../../../node/chain/types.js'
import { Gate } from '../../../../node/core/gate.js'
import type { BatchId, Hash, TxId } from '../../../../node/core/ids.js'
import { ScriptedChain, type ChainAnswer } from '../../../support/scripted-chain.js'
import { rejectionOf, waitUntil } from '../../../support/wait.js'

const contract = '0x' + '33'.repeat(20)
const version = (v: number): string => batchPinInterface.encodeFunctionResult('networkVersion', [v])

const request = (): PinBatchRequest => ({
  txId: randomUUID() as TxId,
  batchId: randomUUID() as BatchId,
  batchHash: randomBytes(32).toString('hex') as Hash,
  payloadRef: 'Qm',
  contexts: [],
})

describe('chain seam over a scripted endpoint: verification, lag, notifications and stop', () => {
  let endpoint: ScriptedChain
  let url: string
  let chain: Chain | undefined
  let lines: string[]
  /** What the endpoint answers; each test changes what it needs. */
  let state: { head: number; code: string; networkVersion: ChainAnswer }

  beforeEach(async () => {
    endpoint = new ScriptedChain()
    url = await endpoint.start()
    lines = []
    state = { head: 3, code: '0x6080', networkVersion: { result: version(2) } }
    endpoint.answer = (method) => {
      switch (method) {
        case 'eth_chainId':
          return { result: '0x7a69' }
        case 'eth_getCode':
          return { result: state.code }
        case 'eth_call':
          return state.networkVersion
        case 'eth_blockNumber':
          return { result: '0x' + state.head.toString(16) }
        case 'eth_getLogs':
          return { result: [] }
        default:
          return { error: { code: -32601, message: `${method} not scripted` } }
      }
    }
  })

  afterEach(async () => {
    await chain?.stop()
    chain = undefined
    await endpoint.stop()
  })

  const start = (opts: { contract?: string; fromBlock?: number; onEvents?: (through: number) => Promise<void>; readGate?: Gate } = {}): Chain => {
    chain = createChain({
      rpc: url,
      contract: opts.contract ?? contract,
      privateKey: '0x' + '01'.repeat(32),
      fromBlock: opts.fromBlock ?? 0,
      onEvents: async (_events, through) => opts.onEvents?.(through),
      log: (line) => lines.push(line),
      pollIntervalMs: 20,
      readGate: opts.readGate,
    })
    chain.start()
    return chain
  }
  const logged = (line: string): Promise<void> => waitUntil(`the line ${line}`, () => lines.includes(line), { timeoutMs: 20_000, intervalMs: 10 })

  it('says once what is wrong at the contract address until a BatchPin V2 contract is there, then follows it', async () => {
    state.code = '0x'
    const c = start()
    const where = `${contract} on ${url}`
    await logged(`chain: no contract at ${where}`)
    expect(c.status()).to.deep.include({ connected: false, error: `no contract at ${where}` })
    state.code = '0x6080'
    state.networkVersion = { error: { code: 3, message: 'execution reverted' } }
    await logged(`chain: the contract at ${where} has no networkVersion(): not a FireFly BatchPin contract`)
    state.networkVersion = { result: version(1) }
    await logged(`chain: the contract at ${where} has networkVersion() 1; Parley needs 2`)
    state.networkVersion = { result: version(2) }
    await logged(`chain: following ${where} (chain id 31337, networkVersion 2) from block 0`)
    await waitUntil('caught up', () => c.status().lastProcessedBlock === 3)
    expect(c.status()).to.deep.include({ connected: true, networkVersion: 2, error: undefined, headBlock: 3 })
    // One line per problem, however many retries each took.
    expect(lines.filter((l) => l.startsWith('chain: no contract at'))).to.have.length(1)
  })

  it('never asks the chain about a contract address that is not one, and fails a pin waiting for it at stop', async () => {
    const c = start({ contract: 'nope' })
    await logged('chain: contract address nope is not an Ethereum address')
    expect(endpoint.calls).to.not.include('eth_getCode')
    // A pin waiting for the contract to check out: its sender stops waiting, then the chain stops under the next.
    const abandoned = new AbortController()
    const first = c.submitPinBatch(request(), abandoned.signal)
    setTimeout(() => abandoned.abort(), 20)
    expect(await rejectionOf<Error & { code?: string }>(first.sent)).to.include({ code: 'UNAVAILABLE', message: 'the pinBatch submission was abandoned (its sender is stopping)' })
    const waiting = c.submitPinBatch(request())
    setTimeout(() => void c.stop(), 20)
    expect(await rejectionOf<Error & { code?: string }>(waiting.sent)).to.include({ code: 'UNAVAILABLE', message: 'the chain connection was stopped' })
    expect(await rejectionOf<Error & { code?: string }>(c.submitPinBatch(request()))).to.include({ code: 'UNAVAILABLE', message: 'the chain connection was stopped' })
    expect(endpoint.calls).to.not.include('eth_sendRawTransaction')
  })

  it('says when the chain is behind the stored cursor (a reset chain?), and when it has caught up again', async () => {
    state.head = 5
    const c = start({ fromBlock: 100 })
    await logged(`chain: the head block 5 on ${url} is behind the stored cursor 100; waiting for the chain to reach it (was the chain reset?)`)
    expect(c.status().lastProcessedBlock).to.equal(99)
    state.head = 120
    await logged('chain: the chain has reached block 120 again')
    expect(lines.filter((l) => l.includes('is behind the stored cursor'))).to.have.length(1)
  })

  it('says when a failed store of events works again, offering the same blocks meanwhile', async () => {
    const offered: number[] = []
    let failures = 2
    const c = start({
      onEvents: async (through) => {
        offered.push(through)
        if (failures-- > 0) throw new Error('disk full')
      },
    })
    await logged('chain: storing the events of blocks 0-3 failed: disk full; retrying')
    await logged('chain: storing events works again')
    expect(offered.slice(0, 3)).to.deep.equal([3, 3, 3])
    expect(lines.filter((l) => l.includes('failed: disk full'))).to.have.length(1)
    expect(c.status().error).to.equal(undefined)
  })

  it('polls and says so when new-block notifications are refused, and reads to an announced head once they work', async () => {
    const c = start()
    const ws = url.replace(/^http/, 'ws') + '/'
    await logged(`chain: no new-block notifications from ${ws} (eth_subscribe refused: subscriptions are off); checking every 20 ms instead`)
    expect(c.status().lastProcessedBlock).to.equal(3)
    endpoint.subscriptions = true
    await logged(`chain: new-block notifications from ${ws} are back`)
    // An announced head is read up to without asking for the head, which still says 3.
    await waitUntil('subscribed', () => endpoint.subscriberCount === 1)
    endpoint.announce(40, 7n)
    await waitUntil('read to the announced head', () => c.status().lastProcessedBlock === 40)
    expect(c.status().headBlock).to.equal(40)
  })

  it('reads no logs while its read gate is held, and goes on from its cursor at the release', async () => {
    const gate = new Gate()
    const throughs: number[] = []
    const c = start({ readGate: gate, onEvents: async (through) => {
      throughs.push(through)
      // Held during the catch-up: the next round parks at the gate.
      gate.hold()
    } })
    await waitUntil('the first range stored', () => throughs.length === 1)
    state.head = 9
    const calls = endpoint.calls.length
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(endpoint.calls.slice(calls)).to.not.include('eth_getLogs')
    expect(c.status().lastProcessedBlock).to.equal(3)
    gate.release()
    await waitUntil('caught up after the release', () => c.status().lastProcessedBlock === 9)
    expect(throughs.slice(0, 2)).to.deep.equal([3, 9])
  })
})
