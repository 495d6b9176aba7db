/**
 * A collection query as the API reads it from FireFly's filter syntax, before anything knows about columns: the
 * data layer checks the field names against the collection's queryable fields and turns it into SQL.
 */
export type FilterOp = 'eq' | 'gt' | 'gte' | 'lt' | 'lte' | 'contains' | 'startswith' | 'endswith'

export interface FilterCondition {
  /** The field as the caller spelled it; matched case-insensitively against the collection's fields. */
  field: string
  op: FilterOp
  /** The value as given; typed (number, time) by the data layer, which knows each field's kind. */
  value: string
  not: boolean
  caseInsensitive: boolean
}

/** Every group must match (AND); within a group, any condition (OR): a field given more than once ORs its values. */
export type Filter = readonly (readonly FilterCondition[])[]

export interface Paging {
  limit: number
  skip: number
}

export interface CollectionQuery extends Paging {
  filter?: Filter
}

export interface MessageQuery extends CollectionQuery {
  namespace: string
  /** true: not yet confirmed (ready, pending); false: confirmed. */
  pending?: boolean
}

export interface EventQuery extends CollectionQuery {
  namespace: string
  /** Narrowings for internal callers; the API expresses the same through `filter`. */
  type?: string
  reference?: string
  /** With `reference`: only the events about the message of this hash (and those that name none). */
  referenceHash?: string
  /** Oldest first (FireFly's `sort=sequence`); newest first otherwise. */
  ascending?: boolean
}

export interface BlockchainEventQuery extends CollectionQuery {
  /** Only the events that pinned this batch (the route's `batch` parameter). */
  batchId?: string
}
