import type { SubscriptionId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

/** The only transport this node serves: WebSockets (FireFly's webhooks are not served; see docs/api.md). */
export const SUBSCRIPTION_TRANSPORTS = ['websockets'] as const
export type SubscriptionTransport = (typeof SUBSCRIPTION_TRANSPORTS)[number]

/**
 * Regular expressions (RE2 syntax, unanchored; all given must match) on an event and the object it refers to,
 * nested as FireFly's SubscriptionFilter (https://hyperledger.github.io/firefly/latest/reference/types/subscription).
 * The keys and what each is matched against are described once, in `event-filter.ts`.
 */
export interface SubscriptionFilter {
  events?: string
  topic?: string
  message?: { author?: string; group?: string; tag?: string; topics?: string }
  transaction?: { type?: string }
  blockchainevent?: { name?: string; listener?: string }
}

export interface SubscriptionOptions {
  /**
   * `oldest`, `newest` or a sequence as given; stored durable subscriptions hold the number it was locked in as at
   * creation (FireFly's form: `"-1"` for oldest, else the last sequence before the first delivered).
   */
  firstEvent?: string
  /** Events in flight beyond the first before acknowledgements are needed: N allows N+1 unacknowledged. */
  readAhead?: number
  /** Deliver `event_batch` frames of up to readAhead events (default 50), acknowledged by batch id. */
  batch?: boolean
  /** How long a batch waits to fill, in FireFly's duration form (`50ms`, `1s`); default 50 ms. */
  batchTimeout?: string
}

/** A durable subscription (docs/api.md, Subscriptions), as stored. */
export interface Subscription {
  id: SubscriptionId
  namespace: string
  name: string
  transport: SubscriptionTransport
  filter: SubscriptionFilter
  options: SubscriptionOptions
  created: Timestamp
  updated?: Timestamp
}

/** The subscription a delivery belongs to, as frames name it (`{id, namespace, name}`; ephemeral: name = id). */
export interface SubscriptionRef {
  id: SubscriptionId
  namespace: string
  name: string
}
