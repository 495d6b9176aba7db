import type { Database, Tx } from '../database.js'
import { alsoIn, IN_LIST, inList, insertRows } from '../in-list.js'
import { refKey } from './ref-key.js'
import type { DataRef, Message } from '../../model/index.js'

/** What a batch carried with a message besides its header: its data references (with their digests) and its pins. */
export interface Carried {
  data: DataRef[]
  pins?: string[]
}

/** A message (by id and hash) as one batch (by id and hash) carried it. */
export interface CarriedMessage {
  batchId: string
  batchHash: string
  id: string
  hash: string
  carried: Carried
}

/** Whether two batches carried the same with a message: the same data items (by id, hash and digest) and pins. */
export function sameCarried(a: Carried, b: Carried): boolean {
  if (a.data.length !== b.data.length || (a.pins?.length ?? 0) !== (b.pins?.length ?? 0)) return false
  for (let i = 0; i < a.data.length; i++) {
    const x = a.data[i]!
    const y = b.data[i]!
    if (x.id !== y.id || x.hash !== y.hash || x.digest !== y.digest) return false
  }
  return (a.pins ?? []).every((p, i) => p === b.pins![i])
}

/** `m` with what a batch carried with it instead of what its row holds. */
export function asCarried(m: Message, c: Carried): Message {
  const { pins: _pins, ...rest } = m
  return c.pins ? { ...rest, data: c.data, pins: c.pins } : { ...rest, data: c.data }
}

interface Row {
  batch_id: string
  batch_hash: string
  message_id: string
  message_hash: string
  data: string
  pins: string | null
  [k: string]: string | number | null
}

const INSERT = 'INSERT INTO carried_messages (batch_id, batch_hash, message_id, message_hash, data, pins)'

function fromRow(r: Row): CarriedMessage {
  const data = JSON.parse(r.data) as DataRef[]
  return { batchId: r.batch_id, batchHash: r.batch_hash, id: r.message_id, hash: r.message_hash, carried: r.pins === null ? { data } : { data, pins: JSON.parse(r.pins) as string[] } }
}

/**
 * What each further batch carried with a message held already (schema v20): a message row holds what the first batch
 * stored here carried, and its author may send it again in another batch carrying other data fields or pins. Written
 * only when a batch brings a message held already, pending, from another batch: a batch all new here writes nothing.
 */
export class CarriedMessages {
  constructor(private readonly db: Database) {}

  /** Records what `list` says each batch carried; one recorded already is kept as it is. */
  insertMany(tx: Tx, list: readonly CarriedMessage[]): void {
    if (list.length === 0) return
    insertRows(
      tx,
      INSERT,
      'ON CONFLICT DO NOTHING',
      list.map((c) => [c.batchId, c.batchHash, c.id, c.hash, JSON.stringify(c.carried.data), c.carried.pins ? JSON.stringify(c.carried.pins) : null]),
    )
  }

  /** What batch (id, hash) carried with the messages it found held from another batch, by message id (unique in a batch). */
  ofBatch(batchId: string, batchHash: string, tx?: Tx): Map<string, CarriedMessage> {
    const rows = (tx ?? this.db).all<Row>('SELECT * FROM carried_messages WHERE batch_id = ? AND batch_hash = ?', [batchId, batchHash])
    return new Map(rows.map((r) => [r.message_id, fromRow(r)]))
  }

  /**
   * For each of `refs`, another batch than (batchId, batchHash) that carried that message, if any: the same one on
   * every read (the first by batch id and hash). One read for them all, by refKey.
   */
  others(tx: Tx, refs: readonly { id: string; hash: string }[], batchId: string, batchHash: string): Map<string, CarriedMessage> {
    const out = new Map<string, CarriedMessage>()
    if (refs.length === 0) return out
    const rows = tx.all<Row>(
      `SELECT * FROM carried_messages WHERE message_id ${IN_LIST} AND ${alsoIn('message_hash')} AND NOT (batch_id = ? AND batch_hash = ?) ORDER BY batch_id, batch_hash`,
      [inList([...new Set(refs.map((r) => r.id))]), inList([...new Set(refs.map((r) => r.hash))]), batchId, batchHash],
    )
    const wanted = new Set(refs.map((r) => refKey({ id: r.id, hash: r.hash })))
    for (const r of rows) {
      const key = refKey({ id: r.message_id, hash: r.message_hash })
      if (wanted.has(key) && !out.has(key)) out.set(key, fromRow(r))
    }
    return out
  }

  /** Forgets what batch (id, hash) carried: it is deleted, or the message row now holds it. */
  deleteOfBatch(tx: Tx, batchId: string, batchHash: string, messageId?: string): void {
    if (messageId === undefined) tx.run('DELETE FROM carried_messages WHERE batch_id = ? AND batch_hash = ?', [batchId, batchHash])
    else tx.run('DELETE FROM carried_messages WHERE batch_id = ? AND batch_hash = ? AND message_id = ?', [batchId, batchHash, messageId])
  }
}
