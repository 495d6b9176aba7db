/** A timer the log can cancel; injectable so that a test drives the minute. */
export interface RefusalTimer {
  cancel(): void
}

export interface RefusalLogOptions {
  /** Lines a minute in all (config `quotas.refusalLinesPerMinute`). */
  perMinute: number
  log: (line: string) => void
  /** The line that counts what a minute left unlogged (default: the p2p endpoint's, naming quotas.refusalLinesPerMinute). */
  summary?: (unlogged: number, perMinute: number) => string
  now?: () => number
  schedule?: (fn: () => void, ms: number) => RefusalTimer
}

const MINUTE_MS = 60_000

const realTimer = (fn: () => void, ms: number): RefusalTimer => {
  const t = setTimeout(fn, ms)
  t.unref()
  return { cancel: () => clearTimeout(t) }
}

/**
 * Which refusal lines of the p2p endpoint are written. A stranger may connect as often as it likes, with a fresh
 * self-signed certificate each time, and a member may send what is refused as fast as it likes: neither may flood
 * the log. A minute (from its first refusal) writes at most `perMinute` lines over all peers and certificates, and a
 * line with a key (a certificate, say) once; the rest are counted, and the minute ends with one line giving the count.
 */
export class RefusalLog {
  private readonly now: () => number
  private readonly schedule: (fn: () => void, ms: number) => RefusalTimer
  private windowStart: number | undefined
  private lines = 0
  private unlogged = 0
  /** The keys logged this minute: at most `perMinute` of them. */
  private readonly keys = new Set<string>()
  private timer: RefusalTimer | undefined

  constructor(private readonly opts: RefusalLogOptions) {
    this.now = opts.now ?? Date.now
    this.schedule = opts.schedule ?? realTimer
  }

  /** A refusal: its line is written, or counted for the minute's summary. */
  refused(line: string, key?: string): void {
    const at = this.now()
    if (this.windowStart !== undefined && at - this.windowStart >= MINUTE_MS) this.endMinute()
    if (this.windowStart === undefined) {
      this.windowStart = at
      this.timer = this.schedule(() => this.endMinute(), MINUTE_MS)
    }
    if ((key !== undefined && this.keys.has(key)) || this.lines >= this.opts.perMinute) {
      this.unlogged++
      return
    }
    this.lines++
    if (key !== undefined) this.keys.add(key)
    this.opts.log(line)
  }

  /** Writes what the current minute left unlogged, and stops its timer. */
  close(): void {
    this.endMinute()
  }

  private endMinute(): void {
    this.timer?.cancel()
    this.timer = undefined
    if (this.unlogged > 0) {
      const summary = this.opts.summary ?? p2pSummary
      this.opts.log(summary(this.unlogged, this.opts.perMinute))
    }
    this.windowStart = undefined
    this.lines = 0
    this.unlogged = 0
    this.keys.clear()
  }
}

function p2pSummary(unlogged: number, perMinute: number): string {
  return `p2p: ${unlogged} more refusal(s) in the last minute were not logged, past ${perMinute} lines a minute or repeating a certificate (quotas.refusalLinesPerMinute)`
}
