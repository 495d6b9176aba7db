import type { FuzzRequest } from './request.js'

/**
 * Faults the fuzzer finds in code this suite does not own, reported to its owner and not yet fixed. A match is
 * counted and printed on every run (never dropped silently) but does not fail it; anything else still fails.
 * Remove an entry once its fix lands: the run then says the fault was not seen.
 */
export interface KnownFault {
  id: string
  /** The file that has to change. */
  owner: string
  what: string
  matches(req: FuzzRequest, problem: string): boolean
}

export const KNOWN_FAULTS: KnownFault[] = []

export function knownFault(req: FuzzRequest, problem: string): KnownFault | undefined {
  return KNOWN_FAULTS.find((k) => k.matches(req, problem))
}
