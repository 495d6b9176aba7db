/**
 * The events seam: the node's event log as a stream per namespace, woken when new events become durable, and the
 * transports that carry it to applications. Small on purpose: a transport (WebSockets first) sees `stream()` and
 * an iterator of events, never the database or the aggregator; the aggregator sees one `published()` call.
 * FireFly splits it the same way (`event_poller.go` reads the log, `websockets.go` delivers), without its poll.
 */
import type { EnrichedEvent, NodeEvent } from '../model/index.js'
import type { GoJsonValue } from '../core/json.js'

/**
 * How a stream reads the log: events of `namespace` with sequence > `afterSeq`, oldest first, at most `limit`.
 * `EventsRepo.after` fits. Synchronous, so nothing can be published between a stream noting the generation and
 * the read; it may throw (the database closed), which ends the stream that called it.
 */
export type EventReader = (namespace: string, afterSeq: number, limit: number) => NodeEvent[]

export interface EventStreamOptions {
  namespace: string
  /** Yield events with sequence greater than this (0: the whole log); an integer >= 0. */
  after: number
  /** Ends the stream when aborted, as `return()` does; an already aborted signal gives a stream that is done. */
  signal?: AbortSignal
  /** Events read per database query (default 200); a wake reads one page, more only while pages come back full. */
  pageSize?: number
}

/**
 * A stream read one event at a time (`for await`) or a page at a time (`nextPage`, for readers that look events'
 * objects up per page). Mixing the two is fine: both take from the same buffer, in order.
 */
export interface EventPageStream extends AsyncIterableIterator<NodeEvent> {
  /** Every buffered event not yet returned (at least one, waiting as `next()` does); undefined once the stream ended. */
  nextPage(): Promise<readonly NodeEvent[] | undefined>
}

export interface EventStreams {
  /**
   * Wakes the streams waiting on the namespaces of `events`. Call it only once the transaction that inserted them
   * is durable: a stream never yields an event above the highest sequence published so far (see
   * `createEventStreams`), because reads see commits whose fsync is still pending and what a transport delivers
   * is told to the outside world. Commits become durable in commit order, so publishing sequence N vouches for
   * every sequence up to N. Never throws and does no reading itself: woken streams read on their own next turn.
   * Publishing events a stream already returned, or an empty list, is harmless.
   */
  published(events: readonly NodeEvent[]): void
  /**
   * Every event of the namespace with sequence > `after`, in sequence order, each exactly once; then it waits
   * (no polling, no timers) until `published()` names the namespace, for as long as it is open. It ends cleanly
   * (`{ done: true }`, also for a `next()` already pending) when the signal aborts, `return()` is called (a
   * `for await` that breaks does this) or `stop()` runs.
   *
   * Failure: if the reader throws, the `next()` that read rejects with that error and the stream is over (later
   * calls are done); other streams are untouched. Throws ParleyError INVALID_FIELD at once for an `after` or
   * `pageSize` that is not a usable integer.
   *
   * No skips, no repeats: the stream keeps the last sequence it returned and always reads after it, so a
   * repeated or late `published()` costs at most an empty read. Before each read it notes its namespace's
   * generation (bumped by every `published()` naming it); when its buffer is spent it waits only if the
   * generation is unchanged since that read and the page was not full, so events published between the read and
   * the wait are read at once instead of waiting for the next publish.
   */
  stream(opts: EventStreamOptions): EventPageStream
  /**
   * Ends every open stream (pending `next()` calls resolve done); streams opened later are done at once. Once it
   * resolves the reader is never called again, so the database can be closed after it.
   */
  stop(): Promise<void>
}

/**
 * What a transport is given when it is made: the streams to read and a log. A transport opens one stream per
 * connection or subscription, from an offset it keeps; acknowledgements, offsets, back-pressure (how many events
 * in flight before it stops pulling) and filtering are its business, not the stream's.
 */
export interface EventTransportContext {
  streams: EventStreams
  log: (line: string) => void
}

/**
 * A way of delivering events to applications (FireFly's event transport plugins). WebSockets are the first;
 * the web console is not one, it is a client of the public REST and WebSocket API like any other.
 */
export interface EventTransport {
  /** Names the transport in logs and in subscription definitions (`websockets`). */
  readonly name: string
  /** Begins accepting applications. Rejects (or throws) only for a configuration it can never serve. */
  start(): Promise<void> | void
  /** Ends its streams and connections; resolves when it will deliver nothing more. Never rejects. */
  stop(): Promise<void>
}

/**
 * Reads the objects a page of events refers to (FireFly's `event_enrich.go`), with one query per kind of object for
 * the whole page, never one per event. Events come back in the order given; an event whose object is missing comes
 * back with empty `refs`.
 */
export type EventEnricher = (events: readonly NodeEvent[]) => EnrichedEvent[]

/** An enriched event in the API's JSON shape (FireFly's `EventDelivery` without `subscription`). */
export type EventRenderer = (e: EnrichedEvent) => { [key: string]: GoJsonValue }
