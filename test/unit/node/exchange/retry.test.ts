import { expect } from 'chai'
import { isParleyError, type ParleyError } from '../../../../node/core/errors.js'
import { withRetries } from '../../../../node/exchange/retry.js'
import type { Outcome } from '../../../../node/exchange/client.js'

const QUICK = { attempts: 4, firstWaitMs: 1, maxWaitMs: 4 }

/** The exchange's retries inside one send: what ends them, with which code, and what is logged on the way. */
describe('exchange: retries of one send', () => {
  let lines: string[]
  beforeEach(() => {
    lines = []
  })

  /** Runs withRetries over the outcomes given in turn, answering the error it threw (or undefined) and the attempts made. */
  async function run(outcomes: Outcome[], opts: { signal?: AbortSignal; policy?: typeof QUICK; onAttempt?: (n: number) => void } = {}) {
    let attempts = 0
    try {
      await withRetries('batch b1 to node1', opts.policy ?? QUICK, opts.signal ?? new AbortController().signal, (l) => lines.push(l), async () => {
        opts.onAttempt?.(attempts)
        return outcomes[Math.min(attempts++, outcomes.length - 1)]!
      })
      return { error: undefined, attempts }
    } catch (err) {
      return { error: err as ParleyError, attempts }
    }
  }

  it('ends at the first success, logging one line per distinct problem on the way', async () => {
    const r = await run([{ kind: 'retry', problem: '503 busy' }, { kind: 'retry', problem: '503 busy' }, { kind: 'retry', problem: 'ECONNREFUSED' }, { kind: 'ok' }])
    expect(r).to.deep.equal({ error: undefined, attempts: 4 })
    expect(lines).to.deep.equal(['exchange: batch b1 to node1: 503 busy; retrying', 'exchange: batch b1 to node1: ECONNREFUSED; retrying'])
  })

  it('ends at a refusal for good with BAD_REQUEST, trying no more', async () => {
    const r = await run([{ kind: 'retry', problem: '503 busy' }, { kind: 'final', problem: '400 BAD_PEER_DATA: malformed batch' }, { kind: 'ok' }])
    expect(r.attempts).to.equal(2)
    expect(isParleyError(r.error, 'BAD_REQUEST')).to.equal(true)
    expect(r.error!.message).to.equal('batch b1 to node1: refused: 400 BAD_PEER_DATA: malformed batch')
  })

  it('gives up with UNAVAILABLE after the policy\'s attempts, naming the last problem', async () => {
    const r = await run([{ kind: 'retry', problem: 'no progress for 30000 ms' }])
    expect(r.attempts).to.equal(4)
    expect(isParleyError(r.error, 'UNAVAILABLE')).to.equal(true)
    expect(r.error!.message).to.equal('batch b1 to node1: no progress for 30000 ms (gave up after 4 attempts, p2p.retry)')
  })

  it('tries a stale kept-alive connection again at once, once, without a log line; a second counts as a failure', async () => {
    // A wait as long as the test's timeout: only the retry at once can reach the third attempt.
    const slow = { attempts: 3, firstWaitMs: 600_000, maxWaitMs: 600_000 }
    const stale: Outcome = { kind: 'retry', problem: 'ECONNRESET: socket hang up', now: true }
    expect(await run([stale, { kind: 'ok' }], { policy: slow })).to.deep.equal({ error: undefined, attempts: 2 })
    expect(lines).to.deep.equal([])

    const abort = new AbortController()
    const r = await run([stale, stale, { kind: 'ok' }], { policy: slow, signal: abort.signal, onAttempt: (n) => n === 1 && setTimeout(() => abort.abort(), 10) })
    expect(r.attempts, 'the second stale connection waits its turn').to.equal(2)
    expect(lines).to.deep.equal(['exchange: batch b1 to node1: ECONNRESET: socket hang up; retrying'])
    expect(r.error!.message).to.equal('batch b1 to node1: the exchange is stopping (last attempt: ECONNRESET: socket hang up)')
  })

  it('ends with UNAVAILABLE, trying nothing, when the exchange stopped before the first attempt', async () => {
    const stopped = new AbortController()
    stopped.abort()
    const before = await run([{ kind: 'ok' }], { signal: stopped.signal })
    expect(before.attempts).to.equal(0)
    expect(isParleyError(before.error, 'UNAVAILABLE')).to.equal(true)
    expect(before.error!.message).to.equal('batch b1 to node1: the exchange is stopping')
  })
})
