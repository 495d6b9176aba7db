import type { EnrichedEvent } from './event.js'
import type { SubscriptionFilter } from './subscription.js'

/**
 * One key of a subscription filter: where it sits in the nested filter object (FireFly's SubscriptionFilter), the flat spellings a
 * WebSocket query (`filter.<flat>`) and FireFly's older clients use for it, and what of an event it is matched
 * against. The single description of these fields: the REST body, the WebSocket query and the matcher read it.
 */
export interface EventFilterField {
  /** Path in `SubscriptionFilter`, e.g. `['message', 'author']`. */
  path: readonly [keyof SubscriptionFilter] | readonly [keyof SubscriptionFilter, string]
  /** Dotted name, as in `filter.message.author`. */
  name: string
  /** Other dotted names accepted for it; `deprecated` ones lose to the current name when both are given. */
  aliases: readonly { name: string; deprecated: boolean }[]
  /**
   * The strings of an event the expression is tried on; it matches when it matches any of them. FireFly matches
   * the empty string where an event has no such value (no message, no topic), so `.*` still matches and `.+` does not.
   */
  values(e: EnrichedEvent): readonly string[]
}

const one = (v: string | undefined): readonly string[] => [v ?? '']

export const EVENT_FILTER_FIELDS: readonly EventFilterField[] = [
  { path: ['events'], name: 'events', aliases: [], values: (e) => [e.event.type] },
  { path: ['topic'], name: 'topic', aliases: [], values: (e) => one(e.event.topic) },
  { path: ['message', 'author'], name: 'message.author', aliases: [{ name: 'author', deprecated: true }], values: (e) => one(e.refs.message?.header.author) },
  { path: ['message', 'group'], name: 'message.group', aliases: [{ name: 'group', deprecated: true }], values: (e) => one(e.refs.message?.header.group) },
  { path: ['message', 'tag'], name: 'message.tag', aliases: [{ name: 'tag', deprecated: true }], values: (e) => one(e.refs.message?.header.tag) },
  {
    path: ['message', 'topics'],
    name: 'message.topics',
    aliases: [{ name: 'topics', deprecated: true }],
    values: (e) => (e.refs.message && e.refs.message.header.topics.length > 0 ? e.refs.message.header.topics : ['']),
  },
  { path: ['transaction', 'type'], name: 'transaction.type', aliases: [], values: (e) => one(e.refs.transaction?.type) },
  {
    path: ['blockchainevent', 'name'],
    name: 'blockchainevent.name',
    aliases: [{ name: 'blockchain.name', deprecated: false }],
    values: (e) => one(e.refs.blockchainEvent ? BATCH_PIN_EVENT_NAME : undefined),
  },
  // Only BatchPin logs are read, and they come from no user-created listener.
  { path: ['blockchainevent', 'listener'], name: 'blockchainevent.listener', aliases: [{ name: 'blockchain.listener', deprecated: false }], values: () => [''] },
]

/** The name of the one kind of blockchain event this node reads. */
export const BATCH_PIN_EVENT_NAME = 'BatchPin'
