import { getJson, sleep } from './http.js'
import { parseTimestampMs } from './stats.js'

interface EventOut {
  sequence: number
  type: string
  reference: string
  created: string
}

export interface Confirmation {
  /**
   * The message's `confirmed` timestamp on this member, ms since the epoch (sub-ms as a fraction): its
   * `message_confirmed` event's `created`, which the aggregator writes in the same transaction with the very
   * timestamp it sets as the message's `confirmed`, so the message itself need not be fetched.
   */
  confirmedMs: number
  /** When this client saw the event (poll granularity). */
  seenMs: number
  /** The event's sequence in the member's event log. */
  sequence: number
}

const PAGE = 1000
/** Upper bound on polls of one watcher, whatever the time limit. */
const MAX_POLLS = 200_000

/**
 * Follows one member's `message_confirmed` events from the start of its event log (ascending sequence, each page
 * starting after the last sequence seen), and remembers when each message was confirmed there. One poll loop per
 * member, bounded in count and time.
 */
export class ConfirmationWatcher {
  private readonly seen = new Map<string, Confirmation>()
  /** The highest sequence seen. `skip` would make the node count past every earlier event on each poll. */
  private cursor = 0
  private loop: Promise<void> | undefined
  private readonly stopper = new AbortController()
  errors = 0
  lastError: string | undefined
  polls = 0

  constructor(
    readonly org: string,
    private readonly api: string,
    private readonly namespace: string,
    private readonly intervalMs = 150,
  ) {}

  start(limitMs: number, outer: AbortSignal): void {
    const signal = AbortSignal.any([this.stopper.signal, outer])
    const deadline = Date.now() + limitMs
    this.loop = (async () => {
      while (!signal.aborted && Date.now() < deadline && this.polls < MAX_POLLS) {
        let got = 0
        try {
          got = await this.pollOnce()
        } catch (err) {
          this.errors++
          this.lastError = err instanceof Error ? err.message : String(err)
        }
        if (got < PAGE) await sleep(this.intervalMs, signal)
      }
    })()
  }

  async stop(): Promise<void> {
    this.stopper.abort()
    await this.loop
  }

  get count(): number {
    return this.seen.size
  }

  get(id: string): Confirmation | undefined {
    return this.seen.get(id)
  }

  countOf(ids: readonly string[]): number {
    let n = 0
    for (const id of ids) if (this.seen.has(id)) n++
    return n
  }

  /** Resolves once every id is confirmed here, or the time is up, or `signal` aborts; returns the ids still missing. */
  async waitFor(ids: readonly string[], timeoutMs: number, signal: AbortSignal, onTick?: () => void): Promise<string[]> {
    const deadline = Date.now() + timeoutMs
    const maxTicks = Math.ceil(timeoutMs / 100) + 1
    for (let tick = 0; tick < maxTicks && !signal.aborted && Date.now() < deadline; tick++) {
      if (this.countOf(ids) === ids.length) return []
      onTick?.()
      await sleep(100, signal)
    }
    return ids.filter((id) => !this.seen.has(id))
  }

  private async pollOnce(): Promise<number> {
    this.polls++
    // `sequence=>N` is FireFly's "greater than" filter (`>` escaped for the query string); `sort=sequence` is ascending.
    const url = `${this.api}/api/v1/namespaces/${this.namespace}/events?type=message_confirmed&sequence=%3E${this.cursor}&sort=sequence&limit=${PAGE}`
    const page = await getJson<EventOut[]>(url)
    const seenMs = Date.now()
    for (const e of page) {
      if (!this.seen.has(e.reference)) this.seen.set(e.reference, { confirmedMs: parseTimestampMs(e.created), seenMs, sequence: e.sequence })
      if (e.sequence > this.cursor) this.cursor = e.sequence
    }
    return page.length
  }
}
