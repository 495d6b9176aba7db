import { AssertionError } from 'chai'
import { waitFor } from '../../network/process.js'

/** Thrown by a wait's check when what it sees is wrong, not merely not there yet: the wait ends at once. */
export class Broken extends Error {}

/**
 * network/process.ts's waitFor, for tests: the check's throw counts as "not yet" (a member restarting, a request
 * refused for now) unless it is a failed assertion (chai's AssertionError, or Broken), which ends the wait at once and
 * is thrown as it is. waitFor alone would retry it until the timeout and report it as one.
 */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  let failed: unknown
  await waitFor(
    what,
    async () => {
      try {
        return await check()
      } catch (err) {
        if (!(err instanceof AssertionError || err instanceof Broken)) throw err
        failed = err
        return true
      }
    },
    opts,
  )
  if (failed !== undefined) throw failed
}

/** What a promise rejects with (typed as the caller expects it); a promise that fulfils fails the test. */
export async function rejectionOf<E = Error>(p: Promise<unknown>): Promise<E> {
  try {
    await p
  } catch (err) {
    return err as E
  }
  throw new Error('expected a rejection')
}
