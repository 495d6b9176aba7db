import { ParleyError } from '../core/errors.js'
import type { NodeEvent } from '../model/index.js'
import type { EventPageStream, EventReader, EventStreamOptions, EventStreams } from './types.js'

const DEFAULT_PAGE_SIZE = 200
const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined })

/** The streams of one namespace: what `published()` touches, so its cost does not grow with other namespaces. */
interface Channel {
  /** Bumped by every `published()` naming the namespace; a stream compares it with the value at its last read. */
  generation: number
  /** One-shot wake-ups of the streams waiting now; swapped out whole on publish. */
  waiters: Set<() => void>
  /** Open streams, so the channel is dropped with its last stream and unused namespace names do not pile up. */
  streams: number
}

export interface EventStreamsOptions {
  /**
   * The log's last sequence when the node opened its database, before anything writes: all of it is durable.
   * Streams yield nothing above the highest sequence known durable (this, then each `published()`), because reads
   * also see commits whose fsync is pending. Without it nothing is capped until the first `published()`, which
   * is safe only if no transaction is in flight while a stream reads before then.
   */
  durableThrough?: number
}

/**
 * Event streams over the log read by `reader`. Waiting streams sit in a per-namespace set; `published()` is O(1)
 * per event plus one wake per waiting stream of the namespaces it names, and each wake costs that stream one page
 * read. Nothing here polls or sets a timer.
 */
export function createEventStreams(reader: EventReader, opts: EventStreamsOptions = {}): EventStreams {
  if (opts.durableThrough !== undefined) checkSequence(opts.durableThrough, 'durableThrough')
  const channels = new Map<string, Channel>()
  const open = new Set<EventStream>()
  let durable = opts.durableThrough ?? Number.POSITIVE_INFINITY
  let capped = opts.durableThrough !== undefined
  let stopped = false

  const host: StreamHost = {
    reader,
    durable: () => durable,
    join(namespace) {
      let ch = channels.get(namespace)
      if (!ch) {
        ch = { generation: 0, waiters: new Set(), streams: 0 }
        channels.set(namespace, ch)
      }
      ch.streams++
      return ch
    },
    leave(namespace, stream) {
      open.delete(stream)
      const ch = channels.get(namespace)
      if (ch && --ch.streams === 0) channels.delete(namespace)
    },
  }

  return {
    published(events) {
      for (const e of events) {
        durable = capped ? Math.max(durable, e.sequence) : e.sequence
        capped = true
        const ch = channels.get(e.namespace)
        if (!ch) continue
        ch.generation++
        if (ch.waiters.size === 0) continue
        const waking = ch.waiters
        ch.waiters = new Set()
        for (const wake of waking) wake()
      }
    },

    stream(o: EventStreamOptions) {
      checkSequence(o.after, 'after')
      const pageSize = o.pageSize ?? DEFAULT_PAGE_SIZE
      if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new ParleyError('INVALID_FIELD', `pageSize must be a positive integer, not ${pageSize}`)
      const s = new EventStream(host, o.namespace, o.after, pageSize)
      if (stopped || o.signal?.aborted) {
        s.end()
        return s
      }
      open.add(s)
      if (o.signal) s.endOnAbort(o.signal)
      return s
    },

    async stop() {
      stopped = true
      for (const s of [...open]) s.end()
    },
  }
}

interface StreamHost {
  reader: EventReader
  durable(): number
  join(namespace: string): Channel
  leave(namespace: string, stream: EventStream): void
}

class EventStream implements EventPageStream {
  private readonly channel: Channel
  private cursor: number
  private page: NodeEvent[] = []
  private index = 0
  /** The channel generation noted before the last read; -1 forces the first read. */
  private readGeneration = -1
  /** The last page was full, so more may be there already without any publish. */
  private more = false
  private ended = false
  private wake: (() => void) | undefined
  private unlistenAbort: (() => void) | undefined
  /** Serialises next() calls made without awaiting the previous one, so results come out in order. */
  private tail: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly host: StreamHost,
    private readonly namespace: string,
    after: number,
    private readonly pageSize: number,
  ) {
    this.cursor = after
    this.channel = host.join(namespace)
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<NodeEvent, undefined>> {
    const result = this.tail.then(() => this.pull())
    this.tail = result.then(
      () => undefined,
      () => undefined,
    )
    return result
  }

  return(): Promise<IteratorResult<NodeEvent, undefined>> {
    this.end()
    return Promise.resolve(DONE)
  }

  endOnAbort(signal: AbortSignal): void {
    const onAbort = (): void => this.end()
    signal.addEventListener('abort', onAbort, { once: true })
    this.unlistenAbort = () => signal.removeEventListener('abort', onAbort)
  }

  end(): void {
    if (this.ended) return
    this.ended = true
    this.page = []
    this.unlistenAbort?.()
    this.unlistenAbort = undefined
    this.host.leave(this.namespace, this)
    const wake = this.wake
    if (wake) {
      this.channel.waiters.delete(wake)
      wake()
    }
  }

  nextPage(): Promise<readonly NodeEvent[] | undefined> {
    const result = this.tail.then(() => this.pullPage())
    this.tail = result.then(
      () => undefined,
      () => undefined,
    )
    return result
  }

  private async pull(): Promise<IteratorResult<NodeEvent, undefined>> {
    const e = await this.available(1)
    return e ? { done: false, value: e[0]! } : DONE
  }

  private pullPage(): Promise<readonly NodeEvent[] | undefined> {
    return this.available(Number.POSITIVE_INFINITY)
  }

  /** Up to `max` events of the buffered page, reading or waiting until there is one; undefined once ended. */
  private async available(max: number): Promise<readonly NodeEvent[] | undefined> {
    for (;;) {
      if (this.ended) return undefined
      if (this.index < this.page.length) {
        const end = Math.min(this.page.length, this.index + max)
        const out = this.index === 0 && end === this.page.length ? this.page : this.page.slice(this.index, end)
        this.index = end
        this.cursor = out[out.length - 1]!.sequence
        return out
      }
      if (this.more || this.readGeneration !== this.channel.generation) {
        try {
          this.read()
        } catch (err) {
          this.end()
          throw err
        }
        continue
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve
        this.channel.waiters.add(resolve)
      })
      this.wake = undefined
    }
  }

  private read(): void {
    // Noted before reading: a publish during or after the read changes it, and the loop reads again instead of
    // waiting for a wake that has already happened.
    this.readGeneration = this.channel.generation
    const rows = this.host.reader(this.namespace, this.cursor, this.pageSize)
    const durable = this.host.durable()
    let n = 0
    while (n < rows.length && rows[n]!.sequence <= durable) n++
    this.page = n === rows.length ? rows : rows.slice(0, n)
    this.index = 0
    // Cut rows are not durable yet; their own publish will wake this stream, so reading again now would spin.
    this.more = rows.length === this.pageSize && n === rows.length
  }
}

function checkSequence(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new ParleyError('INVALID_FIELD', `${what} must be an integer sequence >= 0, not ${n}`)
}
