import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { insertRows } from '../in-list.js'
import { GROUP_FIELDS } from '../query-fields.js'
import { goJson, goStruct } from '../../core/json.js'
import type { Hash, IdentityId, MessageId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { CollectionQuery, Group, GroupMember } from '../../model/index.js'

interface Row {
  seq: number
  hash: string
  namespace: string
  name: string
  members: string
  message_id: string | null
  created: string
  [k: string]: string | number | null
}

/**
 * The private groups this member is in (it stores no other), keyed by hash. The members are kept twice: as the
 * sorted JSON list the answers show, and one row each in `group_members`, so that the groups of an org or a node are
 * one indexed query.
 */
export class GroupsRepo {
  constructor(private readonly db: Database) {}

  /**
   * Stores a group unless one with its hash is already stored; answers whether this call stored it. Two sends that
   * both resolved the same new group race here: inside each send's transaction, only the one that gets `true` owns
   * the group's creation (its groupinit).
   */
  insert(tx: Tx, g: Group): boolean {
    const { changes } = tx.run(
      `INSERT INTO groups (hash, namespace, name, members, message_id, created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING`,
      [g.hash, g.namespace, g.name, membersJson(g.members), g.message ?? null, g.created],
    )
    if (changes === 0) return false
    insertRows(
      tx,
      'INSERT INTO group_members (grp, idx, identity, node)',
      '',
      g.members.map((m, i) => [g.hash, i, m.identity, m.node]),
    )
    return true
  }

  /** Records the groupinit message that announced a stored group, unless one is recorded already. */
  setMessage(tx: Tx, hash: Hash, message: MessageId): void {
    tx.run('UPDATE groups SET message_id = ? WHERE hash = ? AND message_id IS NULL', [message, hash])
  }

  /** A group by hash, whatever its namespace (the hash covers the namespace). Inside a transaction pass `tx`. */
  byHash(hash: string, tx?: Tx): Group | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM groups WHERE hash = ?', [hash])
    return r && fromRow(r)
  }

  /** A group of `namespace` by hash. */
  get(namespace: string, hash: string): Group | undefined {
    const r = this.db.get<Row>('SELECT * FROM groups WHERE hash = ? AND namespace = ?', [hash, namespace])
    return r && fromRow(r)
  }

  /** Newest first. */
  list(namespace: string, q: CollectionQuery): Group[] {
    const conds = ['namespace = ?']
    const params: (string | number)[] = [namespace]
    andWhere(conds, params, filterSql(q.filter, GROUP_FIELDS))
    return this.db.all<Row>(`SELECT * FROM groups WHERE ${conds.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }

  /**
   * The groups an org (by DID) or a node (by identity id) is a member of, newest first, in one namespace or all:
   * one query over the `group_members` index.
   */
  ofMember(who: { identity: string } | { node: string }, namespace?: string, tx?: Tx): Group[] {
    const [column, value] = 'identity' in who ? ['identity', who.identity] : ['node', who.node]
    const inNs = namespace === undefined ? '' : ' AND namespace = ?'
    return (tx ?? this.db)
      .all<Row>(`SELECT * FROM groups WHERE hash IN (SELECT grp FROM group_members WHERE ${column} = ?)${inNs} ORDER BY seq DESC`, namespace === undefined ? [value] : [value, namespace])
      .map(fromRow)
  }
}

/** The members as the group hash covers them: `[{"identity":..,"node":..}]`, in the group's (sorted) order. */
function membersJson(members: readonly GroupMember[]): string {
  return goJson(members.map((m) => goStruct(['identity', m.identity], ['node', m.node])))
}

function fromRow(r: Row): Group {
  return {
    hash: r.hash as Hash,
    namespace: r.namespace,
    name: r.name,
    members: (JSON.parse(r.members) as { identity: string; node: string }[]).map((m) => ({ identity: m.identity, node: m.node as IdentityId })),
    created: r.created as Timestamp,
    ...(r.message_id ? { message: r.message_id as MessageId } : {}),
  }
}
