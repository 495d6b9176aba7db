/** A mined pin: its transaction and the block it landed in. */
export interface MinedPin {
  txHash: string
  blockNumber: number
}

/**
 * A pin on its way: the promise itself settles once the transaction is mined (or for good fails), and `sent` once the
 * chain has taken it (its hash known, its nonce spent). Pin order is fixed by `sent`: a sender that waits for it before
 * submitting the next batch keeps its batches in order even when a send fails and is retried.
 */
export interface PinSubmission extends Promise<MinedPin> {
  readonly sent: Promise<string>
}

/**
 * Builds a submission from its two stages. Each stage is marked observed, so a caller that waits on only one of them
 * does not leave the other to surface as an unhandled rejection; whoever awaits a stage still sees its failure.
 */
export function pinSubmission(sent: Promise<string>, mined: Promise<MinedPin>): PinSubmission {
  sent.catch(() => {})
  mined.catch(() => {})
  return Object.assign(mined, { sent })
}

export function failedSubmission(err: unknown): PinSubmission {
  const failed = Promise.reject(err instanceof Error ? err : new Error(String(err)))
  return pinSubmission(failed, failed as Promise<never>)
}
