import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { IDENTITY_FIELDS, VERIFIER_FIELDS } from '../query-fields.js'
import { IN_LIST, inList } from '../in-list.js'
import type { IdentityId, MessageId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import { type Identity, type IdentityType, type Verifier, type VerifierType, type CollectionQuery } from '../../model/index.js'

interface Row {
  id: string
  did: string
  type: string
  parent: string | null
  namespace: string
  name: string
  description: string | null
  profile: string | null
  message_id: string
  created: string
  updated: string | null
  registered_after: number | null
  [k: string]: string | number | null
}

/** Confirmed identities (orgs and nodes) and the verifiers (signing keys, p2p peer ids) that prove them. */
export class IdentitiesRepo {
  constructor(private readonly db: Database) {}

  insert(tx: Tx, i: Identity): void {
    tx.run(
      `INSERT INTO identities (id, did, type, parent, namespace, name, description, profile, message_id, created, registered_after)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [i.id, i.did, i.type, i.parent ?? null, i.namespace, i.name, i.description ?? null, i.profile ? JSON.stringify(i.profile) : null, i.messages.claim, i.created, i.registeredAfter ?? null],
    )
  }

  insertVerifier(tx: Tx, v: Verifier): void {
    tx.run('INSERT INTO verifiers (identity_id, type, value, created) VALUES (?, ?, ?, ?)', [v.identity, v.type, v.value, v.created])
  }

  byDid(did: string, tx?: Tx): Identity | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM identities WHERE did = ?', [did])
    return r && fromRow(r)
  }

  byId(id: string, tx?: Tx): Identity | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM identities WHERE id = ?', [id])
    return r && fromRow(r)
  }

  /** The identities among `ids` that are held here, by id, with one query whatever the number of ids. */
  byIds(ids: readonly string[], tx?: Tx): Map<string, Identity> {
    const out = new Map<string, Identity>()
    if (ids.length === 0) return out
    for (const r of (tx ?? this.db).all<Row>(`SELECT * FROM identities WHERE id ${IN_LIST}`, [inList(ids)])) out.set(r.id, fromRow(r))
    return out
  }

  /** The identity a verifier (e.g. a signing address) belongs to. */
  byVerifier(type: VerifierType, value: string, tx?: Tx): Identity | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT i.* FROM identities i JOIN verifiers v ON v.identity_id = i.id WHERE v.type = ? AND v.value = ?', [type, value])
    return r && fromRow(r)
  }

  verifiersOf(identityId: string, tx?: Tx): Verifier[] {
    return (tx ?? this.db).all<VerifierRow>('SELECT identity_id, type, value, created FROM verifiers WHERE identity_id = ? ORDER BY seq', [identityId]).map(verifierFromRow)
  }

  /** The first node confirmed whose parent is `parent` (an org's default node for private sends). */
  firstNodeOf(parent: IdentityId, tx?: Tx): Identity | undefined {
    const r = (tx ?? this.db).get<Row>("SELECT * FROM identities WHERE type = 'node' AND parent = ? ORDER BY seq LIMIT 1", [parent])
    return r && fromRow(r)
  }

  /** Oldest first: the order the network confirmed them in. Every type when `type` is undefined. */
  list(type: IdentityType | undefined, q: CollectionQuery): Identity[] {
    const conds = type === undefined ? ['1 = 1'] : ['type = ?']
    const params: (string | number)[] = type === undefined ? [] : [type]
    andWhere(conds, params, filterSql(q.filter, IDENTITY_FIELDS))
    return this.db.all<Row>(`SELECT * FROM identities WHERE ${conds.join(' AND ')} ORDER BY seq LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }

  /** Verifiers of every identity (or of one), oldest first, filtered and paged. */
  verifiers(q: CollectionQuery, identityId?: string): Verifier[] {
    const conds = identityId === undefined ? ['1 = 1'] : ['identity_id = ?']
    const params: (string | number)[] = identityId === undefined ? [] : [identityId]
    andWhere(conds, params, filterSql(q.filter, VERIFIER_FIELDS))
    return this.db
      .all<VerifierRow>(`SELECT identity_id, type, value, created FROM verifiers WHERE ${conds.join(' AND ')} ORDER BY seq LIMIT ? OFFSET ?`, [...params, q.limit, q.skip])
      .map(verifierFromRow)
  }

  /** Every verifier, oldest first: one or two per member, so few enough to read whole. */
  allVerifiers(): Verifier[] {
    return this.db.all<VerifierRow>('SELECT identity_id, type, value, created FROM verifiers ORDER BY seq').map(verifierFromRow)
  }

  all(type: IdentityType): Identity[] {
    return this.db.all<Row>('SELECT * FROM identities WHERE type = ? ORDER BY seq', [type]).map(fromRow)
  }
}

interface VerifierRow {
  identity_id: string
  type: string
  value: string
  created: string
  [k: string]: string | number | null
}

function verifierFromRow(r: VerifierRow): Verifier {
  return { identity: r.identity_id as IdentityId, type: r.type as VerifierType, value: r.value, created: r.created as Timestamp }
}

function fromRow(r: Row): Identity {
  return {
    id: r.id as IdentityId,
    did: r.did,
    type: r.type as IdentityType,
    ...(r.parent ? { parent: r.parent as IdentityId } : {}),
    namespace: r.namespace,
    name: r.name,
    ...(r.description ? { description: r.description } : {}),
    ...(r.profile ? { profile: JSON.parse(r.profile) as Identity['profile'] } : {}),
    messages: { claim: r.message_id as MessageId },
    created: r.created as Timestamp,
    ...(r.updated ? { updated: r.updated as Timestamp } : {}),
    ...(r.registered_after !== null && r.registered_after !== undefined ? { registeredAfter: Number(r.registered_after) } : {}),
  }
}
