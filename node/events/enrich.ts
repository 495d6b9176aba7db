import type { Datatype, EventReferences, EventTransaction, EventType, Identity, Message, NodeEvent, StoredBlockchainEvent } from '../model/index.js'
import type { EventEnricher } from './types.js'

/**
 * Where the enricher reads each kind of object: by ids, all of a page's at once (one query each), answering those
 * held here by id. The repositories of the data layer fit as they are.
 */
export interface EnricherSources {
  /** `byRefs` by `${id}/${hash}` (events naming the message's hash), `getMany` by id (older events): as MessagesRepo. */
  messages: { getMany(ids: readonly string[]): Map<string, Message>; byRefs(refs: readonly { id: string; hash: string }[]): Map<string, Message> }
  datatypes: { byIds(ids: readonly string[]): Map<string, Datatype> }
  identities: { byIds(ids: readonly string[]): Map<string, Identity> }
  transactions: { byIds(ids: readonly string[]): Map<string, EventTransaction> }
  blockchainEvents: { byIds(ids: readonly string[]): Map<string, StoredBlockchainEvent> }
}

type Kind = keyof EventReferences

/**
 * What an event's object is looked up by: a message event naming its message's hash, by id and hash (two messages may
 * share an id: the event is about the one its verdict decided); any other, by its reference.
 */
function keyOf(e: NodeEvent): string {
  return e.referenceHash === undefined ? e.reference : `${e.reference}/${e.referenceHash}`
}

/** The messages `keys` name, by key: `${id}/${hash}` read by both, a bare id read as the message that id means. */
function messagesByKey(messages: EnricherSources['messages'], keys: readonly string[]): Map<string, Message> {
  const refs: { id: string; hash: string }[] = []
  const ids: string[] = []
  for (const k of keys) {
    const at = k.indexOf('/')
    if (at < 0) ids.push(k)
    else refs.push({ id: k.slice(0, at), hash: k.slice(at + 1) })
  }
  const out = refs.length > 0 ? messages.byRefs(refs) : new Map<string, Message>()
  if (ids.length > 0) for (const [id, m] of messages.getMany(ids)) out.set(id, m)
  return out
}

/** The object each event type refers to by its `reference` (FireFly's `event_enrich.go`). */
const KIND_OF: Record<EventType, Kind> = {
  message_confirmed: 'message',
  message_rejected: 'message',
  datatype_confirmed: 'datatype',
  identity_confirmed: 'identity',
  transaction_submitted: 'transaction',
  blockchain_event_received: 'blockchainEvent',
}

/**
 * Reads the objects a page of events refers to with at most one query per kind of object, whatever the page's size:
 * the references are grouped by kind first, then each kind is read once. A message comes without its data values
 * (a Message holds data references only), as FireFly's event deliveries carry it.
 */
export function createEventEnricher(sources: EnricherSources): EventEnricher {
  const read: { [K in Kind]: (ids: readonly string[]) => Map<string, NonNullable<EventReferences[K]>> } = {
    message: (keys) => messagesByKey(sources.messages, keys),
    datatype: (ids) => sources.datatypes.byIds(ids),
    identity: (ids) => sources.identities.byIds(ids),
    transaction: (ids) => sources.transactions.byIds(ids),
    blockchainEvent: (ids) => sources.blockchainEvents.byIds(ids),
  }
  return (events) => {
    const wanted = new Map<Kind, Set<string>>()
    for (const e of events) {
      const kind = KIND_OF[e.type]
      // A type this build does not know (the log is read back as text) refers to nothing it can read.
      if (!kind) continue
      let ids = wanted.get(kind)
      if (!ids) wanted.set(kind, (ids = new Set()))
      ids.add(keyOf(e))
    }
    const found = new Map<Kind, Map<string, unknown>>()
    for (const [kind, ids] of wanted) found.set(kind, read[kind]([...ids]))
    return events.map((event: NodeEvent) => {
      const kind = KIND_OF[event.type]
      const object = kind ? found.get(kind)?.get(keyOf(event)) : undefined
      return { event, refs: object === undefined ? {} : ({ [kind]: object } as EventReferences) }
    })
  }
}
