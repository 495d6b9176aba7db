/** The exchange's retries inside one send: a few attempts with doubling waits, then UNAVAILABLE. */
import { Backoff, sleep } from '../core/backoff.js'
import { ParleyError } from '../core/errors.js'
import type { Outcome } from './client.js'
import type { RetryPolicy } from './types.js'

/** 7 attempts, waits of 0.5, 1, 2, 4, 8 and 16 s between them: 31.5 s of waiting before a send gives up. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 7, firstWaitMs: 500, maxWaitMs: 16_000 }

/**
 * Runs `attempt` until it succeeds, is refused for good (BAD_REQUEST), runs out of attempts or `signal` aborts (both
 * UNAVAILABLE). A failure on a kept-alive connection the peer had closed is tried again at once, without a wait.
 * `log` hears one line per distinct problem, not one per attempt.
 */
export async function withRetries(what: string, policy: RetryPolicy, signal: AbortSignal, log: (line: string) => void, attempt: () => Promise<Outcome>): Promise<void> {
  const backoff = new Backoff(policy.firstWaitMs, policy.maxWaitMs)
  let last: string | undefined
  let retriedAtOnce = false
  for (let n = 1; ; n++) {
    if (signal.aborted) throw new ParleyError('UNAVAILABLE', `${what}: the exchange is stopping${last ? ` (last attempt: ${last})` : ''}`)
    const outcome = await attempt()
    if (outcome.kind === 'ok') return
    if (outcome.kind === 'final') throw new ParleyError('BAD_REQUEST', `${what}: refused: ${outcome.problem}`)
    last = outcome.problem
    if (n >= policy.attempts) throw new ParleyError('UNAVAILABLE', `${what}: ${outcome.problem} (gave up after ${n} attempts, p2p.retry)`)
    if (outcome.now && !retriedAtOnce) {
      retriedAtOnce = true
      continue
    }
    if (backoff.failed(outcome.problem)) log(`exchange: ${what}: ${outcome.problem}; retrying`)
    await sleep(backoff.next(), signal)
  }
}
