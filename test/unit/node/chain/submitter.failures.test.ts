import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { Transaction } from 'ethers'
import { keySigner } from '../../../../node/chain/key-address.js'
import { ProblemLog } from '../../../../node/chain/problems.js'
import { RpcError } from '../../../../node/chain/rpc.js'
import { PinSubmitter } from '../../../../node/chain/submitter.js'
import type { PinBatchRequest } from '../../../../node/chain/types.js'
import { ParleyError } from '../../../../node/core/errors.js'
import type { BatchId, Hash, TxId } from '../../../../node/core/ids.js'
import { countCalls, ScriptedRpc } from '../../../support/scripted-rpc.js'
import { rejectionOf } from '../../../support/wait.js'

const wallet = keySigner('0x' + randomBytes(32).toString('hex'))
const from = wallet.address.toLowerCase()
const contract = '0x' + '22'.repeat(20)

const request = (): PinBatchRequest => ({
  txId: randomUUID() as TxId,
  batchId: randomUUID() as BatchId,
  batchHash: randomBytes(32).toString('hex') as Hash,
  payloadRef: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG',
  contexts: [randomBytes(32).toString('hex') as Hash],
})

type Handler = (params: unknown[]) => unknown

/**
 * A submitter over a scripted chain: each method answers as a healthy Hardhat would unless the test overrides it.
 * Records the raw transactions taken, the problem lines and the waits between tries.
 */
function rig(overrides: Record<string, Handler> = {}, opts: { stopped?: () => boolean } = {}) {
  const taken: string[] = []
  const lines: string[] = []
  const waits: number[] = []
  const healthy: Record<string, Handler> = {
    eth_getTransactionCount: () => '0x0',
    eth_estimateGas: () => '0x5208',
    eth_maxPriorityFeePerGas: () => '0x3b9aca00',
    eth_getBlockByNumber: () => ({ baseFeePerGas: '0x7' }),
    eth_sendRawTransaction: (p) => {
      taken.push(p[0] as string)
      return Transaction.from(p[0] as string).hash
    },
    eth_getTransactionByHash: () => null,
    eth_getTransactionReceipt: () => ({ transactionHash: '0x', blockNumber: '0x10', status: '0x1' }),
  }
  const rpc = new ScriptedRpc((method, params) => {
    const answer = overrides[method] ?? healthy[method]
    if (!answer) throw new Error(`unexpected ${method}`)
    return answer(params)
  })
  const submitter = new PinSubmitter({
    rpc,
    wallet,
    contract,
    problems: new ProblemLog((line) => lines.push(line)),
    ready: async () => 31337n,
    nextHead: async (ms) => void waits.push(ms),
    stopped: opts.stopped ?? (() => false),
    head: () => undefined,
  })
  return { rpc, submitter, taken, lines, waits, healthy }
}

/** An answer that fails the first `times` calls with `err`, then answers as `then` does. */
function failing(times: number, err: () => Error, then: Handler): Handler {
  let left = times
  return (p) => {
    if (left-- > 0) throw err()
    return then(p)
  }
}

describe('pin submitter: refusals, retries and recoveries', () => {
  it('refuses a request it cannot encode before asking the chain anything', async () => {
    const { rpc, submitter } = rig()
    const submission = submitter.submit({ ...request(), contexts: ['not a hash' as Hash] })
    const err = await rejectionOf(submission)
    expect(await rejectionOf(submission.sent)).to.equal(err)
    expect(rpc.calls).to.deep.equal([])
  })

  it('refuses to send once the connection is stopped or the submission abandoned, sending nothing', async () => {
    const stopped = rig({}, { stopped: () => true })
    const err = await rejectionOf(stopped.submitter.submit(request()).sent)
    expect(err).to.be.instanceOf(ParleyError).and.include({ code: 'UNAVAILABLE', message: 'the chain connection was stopped' })
    expect(stopped.taken).to.deep.equal([])

    const abandoned = rig()
    const controller = new AbortController()
    controller.abort()
    const err2 = await rejectionOf(abandoned.submitter.submit(request(), controller.signal))
    expect(err2).to.be.instanceOf(ParleyError).and.include({ code: 'UNAVAILABLE', message: 'the pinBatch submission was abandoned (its sender is stopping)' })
    expect(abandoned.taken).to.deep.equal([])
  })

  it('counts the nonce again and signs again after a nonce refusal, logging the problem and the recovery once', async () => {
    let counted = 0
    const r = rig({
      eth_getTransactionCount: () => (counted++ === 0 ? '0x0' : '0x5'),
    })
    r.healthy.eth_sendRawTransaction = failing(1, () => new RpcError('nonce too low: next nonce 5, tx nonce 0', false, -32000), r.healthy.eth_sendRawTransaction!)
    await r.submitter.submit(request())
    expect(countCalls(r.rpc.calls, 'eth_getTransactionCount')).to.equal(2)
    expect(r.taken.map((raw) => Transaction.from(raw).nonce)).to.deep.equal([5])
    expect(r.lines).to.deep.equal([
      `chain: pinBatch from ${from} not sent yet: nonce too low: next nonce 5, tx nonce 0; retrying`,
      `chain: pinBatch from ${from} is being sent again`,
    ])
    // The next pin takes the nonce after it without asking.
    await r.submitter.submit(request())
    expect(countCalls(r.rpc.calls, 'eth_getTransactionCount')).to.equal(2)
    expect(Transaction.from(r.taken[1]!).nonce).to.equal(6)
  })

  it('waits out an unreachable endpoint without a line of its own, resending the same signed bytes', async () => {
    const r = rig()
    const attempts: string[] = []
    r.healthy.eth_sendRawTransaction = failing(
      2,
      () => new RpcError('cannot reach http://127.0.0.1:8545: ECONNREFUSED', true),
      r.healthy.eth_sendRawTransaction!,
    )
    const send = r.healthy.eth_sendRawTransaction
    r.healthy.eth_sendRawTransaction = (p) => {
      attempts.push(p[0] as string)
      return send(p)
    }
    await r.submitter.submit(request())
    expect(attempts).to.have.length(3)
    expect(new Set(attempts).size).to.equal(1)
    expect(r.lines).to.deep.equal([])
    expect(r.waits).to.deep.equal([250, 500])
  })

  it('re-signs while the account is unfunded, with one line for the outage however its amounts change', async () => {
    let n = 0
    const r = rig()
    r.healthy.eth_sendRawTransaction = failing(3, () => new RpcError(`insufficient funds for gas * price + value: have 0 want ${++n}`, false, -32000), r.healthy.eth_sendRawTransaction!)
    await r.submitter.submit(request())
    expect(countCalls(r.rpc.calls, 'eth_sendRawTransaction')).to.equal(4)
    expect(r.lines).to.deep.equal([`chain: pinBatch from ${from} not sent yet: insufficient funds for gas * price + value: have 0 want 1; retrying`, `chain: pinBatch from ${from} is being sent again`])
  })

  it('fails a pin the chain refuses for another reason, unless the chain has the transaction (an answer lost)', async () => {
    const reverted = (): Error => new RpcError('execution reverted', false, 3)
    const refused = rig({ eth_sendRawTransaction: () => { throw reverted() } })
    const err = await rejectionOf(refused.submitter.submit(request()).sent)
    expect(err).to.be.instanceOf(RpcError).and.include({ message: 'execution reverted', transport: false })
    expect(countCalls(refused.rpc.calls, 'eth_getTransactionByHash')).to.equal(1)
    expect(refused.lines).to.deep.equal([])

    const known = rig({ eth_sendRawTransaction: () => { throw new RpcError('already known', false, -32000) }, eth_getTransactionByHash: () => ({ hash: '0x' }) })
    const submission = known.submitter.submit(request())
    expect(await submission.sent).to.match(/^0x[0-9a-f]{64}$/)
    expect(await submission).to.deep.include({ blockNumber: 16 })
  })

  it('fails the pins of a failed gas measurement, and measures again for the next pin', async () => {
    let failures = 1
    const r = rig({
      eth_estimateGas: () => {
        if (failures > 0) {
          failures--
          throw new RpcError('execution reverted: no contract at the address', false, 3)
        }
        return '0x5208'
      },
    })
    const err = await rejectionOf(r.submitter.submit(request()))
    expect(err.message).to.equal('execution reverted: no contract at the address')
    expect(r.taken).to.deep.equal([])
    await r.submitter.submit(request())
    expect(r.taken).to.have.length(1)
    expect(countCalls(r.rpc.calls, 'eth_estimateGas')).to.equal(6)
    // Measured once, then reused.
    await r.submitter.submit(request())
    expect(countCalls(r.rpc.calls, 'eth_estimateGas')).to.equal(6)
  })

  it('fails a pin whose transaction reverted, naming it and its block, once it was sent', async () => {
    const r = rig({ eth_getTransactionReceipt: () => ({ transactionHash: '0x', blockNumber: '0x2a', status: '0x0' }) })
    const submission = r.submitter.submit(request())
    const hash = await submission.sent
    const err = await rejectionOf(submission)
    expect(err).to.be.instanceOf(ParleyError).and.include({ code: 'INTERNAL', message: `pinBatch transaction ${hash} reverted in block 42` })
  })

  it('sends a transaction the endpoint forgot again while waiting for its receipt, and waits out an unreachable endpoint', async () => {
    const receipts: Handler[] = [
      () => null, // not mined, and not known: sent again
      () => { throw new RpcError('cannot reach http://127.0.0.1:8545: ECONNRESET', true) },
      () => ({ transactionHash: '0x', blockNumber: '0x11', status: '0x1' }),
    ]
    const r = rig({ eth_getTransactionReceipt: (p) => receipts.shift()!(p) })
    const mined = await r.submitter.submit(request())
    expect(mined.blockNumber).to.equal(17)
    expect(r.taken).to.have.length(2)
    expect(r.taken[0]).to.equal(r.taken[1])
    // The receipt poll's wait, then the backoff's shortest after the outage.
    expect(r.waits).to.deep.equal([2000, 250])
  })

  it('fails a pin whose receipt the endpoint refuses outright, rather than polling for ever', async () => {
    const r = rig({ eth_getTransactionReceipt: () => { throw new RpcError('method not found', false, -32601) } })
    const err = await rejectionOf(r.submitter.submit(request()))
    expect(err).to.be.instanceOf(RpcError).and.include({ message: 'method not found', transport: false })
  })
})
