import { crc32 } from 'node:zlib'
import { ByteReader, ByteWriter } from './byte-buffer.js'
import { DatabaseError } from './errors.js'
import type { SqlParams, SqlValue } from './types.js'

/**
 * The journal's binary layout. A record is one committed SQLite transaction, which holds every
 * `db.transaction` of one event-loop tick: the statements they ran and their bound values. A frame is
 * one group-commit flush: the records written by one write + one fdatasync.
 *
 *   frame:   u32 magic | u32 body length | u32 crc32(body) | body = records
 *   record:  u32 length | u64 seq | u32 op count | ops
 *   op:      u8 kind | kind-specific data
 *     1 statement  string sql | params            (format 1; format 2 only past the dictionary's bound)
 *     2 script     string sql                     (tx.exec: migrations, run once, never named)
 *     3 define     u32 id | string sql | params   (format 2: names the statement and runs it)
 *     4 named      u32 id | params                (format 2: runs a statement named earlier in the file)
 *     5 forget     -                              (format 2: drop every name; first record after a checkpoint)
 *   params:  u8 shape (0 none, 1 positional, 2 named) | u32 n | n × ([string name] value)
 *   value:   u8 tag (0 null, 1 float64, 2 bigint as decimal text, 3 text, 4 blob) | data
 *
 * Why frames are flushes: a crash can tear only the last, unacknowledged flush, in any pattern of
 * pages. With one checksum per flush, a torn flush is one bad frame at the end, while a valid frame
 * after a bad one can only mean damage to data that had been acknowledged.
 *
 * Why statements are named (format 2): the SQL text was most of a small record (~560 of ~1,360 bytes
 * for a message and its data). Each journal file has its own dictionary, built in file order: a
 * definition travels in the record that first uses it, so it is durable exactly when that use is, and
 * a torn tail drops both. Ids are dense (a definition must carry the next id), which lets replay tell
 * a writer bug from a valid file. The writer adopts a record's definitions only once the record is
 * committed and queued, so no later record can refer to a definition that is not ahead of it in the file.
 */

export const FRAME_MAGIC = 0x5259_4c50 // "PLYR" little-endian
export const FRAME_HEADER_BYTES = 12
/** Bigger records or frames are refused when written rather than written as something replay would reject. */
export const MAX_FRAME_BODY_BYTES = 1024 * 1024 * 1024
const RECORD_HEADER_BYTES = 4 + 8 + 4

/** Formats this build reads; it writes only the newest. */
export type JournalFormat = 1 | 2

const OP_STATEMENT = 1
const OP_SCRIPT = 2
const OP_DEFINE = 3
const OP_NAMED = 4
const OP_FORGET = 5
const SHAPE_NONE = 0
const SHAPE_POSITIONAL = 1
const SHAPE_NAMED = 2
const TAG_NULL = 0
const TAG_NUMBER = 1
const TAG_BIGINT = 2
const TAG_TEXT = 3
const TAG_BLOB = 4

/**
 * Past this many names per journal file, new statements are written inline: SQL built dynamically
 * (an IN list of varying length) would otherwise grow the dictionary, in memory, until the next checkpoint.
 */
const MAX_NAMES = 4096
/** Longer SQL is written inline: naming it would keep a large string alive for a saving that rarely recurs. */
const MAX_NAMED_SQL_CHARS = 16 * 1024

export type JournalOp =
  | { kind: 'statement'; sql: string; params: SqlParams | undefined }
  | { kind: 'script'; sql: string }

export interface DecodedRecord {
  seq: number
  ops: JournalOp[]
}

/**
 * The writer's side of the current journal file's dictionary: the names that records already handed
 * to the committer have defined. It starts as what recovery read from the file (so a torn tail's
 * definitions are forgotten with it) and is emptied when a checkpoint exports the snapshot, since
 * every record sealed after that goes to a fresh journal.
 */
export class StatementNames {
  private readonly ids = new Map<string, number>()
  private readonly texts: string[] = []
  private forgetDue = false
  private generation = 0

  constructor(texts: readonly string[] = []) {
    for (const t of texts) this.add(t)
  }

  get size(): number {
    return this.texts.length
  }

  id(sql: string): number | undefined {
    return this.ids.get(sql)
  }

  /** The texts by id, as a reader of the file would have them (a copy). */
  snapshot(): string[] {
    return [...this.texts]
  }

  /**
   * Starts a new dictionary for the records sealed from now on. The next record opens with a forget op,
   * because it lands in the old file if the checkpoint fails after this point.
   */
  reset(): void {
    this.ids.clear()
    this.texts.length = 0
    this.forgetDue = true
    this.generation++
  }

  /** @internal RecordBuilder's view. */
  get state(): { generation: number; forgetDue: boolean } {
    return { generation: this.generation, forgetDue: this.forgetDue }
  }

  /** @internal A sealed record's definitions, once that record is committed and queued for the journal. */
  adopt(defined: readonly string[]): void {
    for (const t of defined) this.add(t)
    this.forgetDue = false
  }

  private add(sql: string): void {
    this.ids.set(sql, this.texts.length)
    this.texts.push(sql)
  }
}

const PART_INITIAL_BYTES = 2048

/**
 * One transaction function's ops, encoded as they run (values at `run` time, not at commit, so a
 * caller that reuses a buffer after binding it cannot change what the journal says was written).
 * A function that fails has its part dropped from the record, and the names it defined with it.
 */
export class TxOps {
  /**
   * Sized for a send (under 1 KB of ops): from the writer's default 256 bytes, a send's part grew twice, two copies per
   * message in a broadcast run. Allocated at the first op (a slice of Node's buffer pool), so a transaction that
   * writes nothing takes none.
   */
  readonly w = new ByteWriter(PART_INITIAL_BYTES)
  ops = 0

  constructor(
    private readonly record: RecordBuilder,
    /** How many names the record had pending when this part began: those it adds come after. */
    readonly namesMark: number,
  ) {}

  addStatement(sql: string, params: SqlParams | undefined): void {
    const id = this.record.nameFor(sql)
    if (id === undefined) {
      this.w.u8(OP_STATEMENT)
      this.w.string(sql)
    } else if (id.defined) {
      this.w.u8(OP_NAMED)
      this.w.u32(id.id)
    } else {
      this.w.u8(OP_DEFINE)
      this.w.u32(id.id)
      this.w.string(sql)
    }
    writeParams(this.w, params)
    this.ops++
  }

  addScript(sql: string): void {
    this.w.u8(OP_SCRIPT)
    this.w.string(sql)
    this.ops++
  }
}

/**
 * The record of one tick: the parts of the transaction functions that succeeded, in order, sealed
 * under one sequence number. Names defined by its parts are pending until `adoptNames`.
 */
export class RecordBuilder {
  private readonly parts: Buffer[] = []
  private opsKept = 0
  private bytesKept = RECORD_HEADER_BYTES
  private readonly pending: string[] = []
  private readonly pendingIds = new Map<string, number>()
  private readonly generation: number

  constructor(private readonly names: StatementNames) {
    this.generation = names.state.generation
  }

  /** Statements and scripts kept so far (zero: nothing to journal). */
  get opCount(): number {
    return this.opsKept
  }

  /** Bytes the record would have if sealed now. */
  get byteLength(): number {
    return this.bytesKept
  }

  /** Starts the part of the next transaction function. */
  begin(): TxOps {
    return new TxOps(this, this.pending.length)
  }

  /** Refuses a finished function's part that would make the record too large to journal. */
  checkFits(part: TxOps): void {
    // +1 for a forget op, which is decided only when the record is sealed. The whole record is a frame's body (its
    // own length field included), which frameHeader refuses past the bound: refused here, it fails this transaction
    // alone rather than the commit it would share.
    const len = this.bytesKept + 1 + part.w.length
    if (len > MAX_FRAME_BODY_BYTES) throw new DatabaseError('DB_MISUSE', `transaction too large for one journal record (${len} bytes)`)
  }

  /** Adds a finished function's part (after `checkFits`). */
  keep(part: TxOps): void {
    this.parts.push(part.w.take())
    this.opsKept += part.ops
    this.bytesKept += part.w.length
  }

  /** Forgets a failed function's part and the names it defined (it is always the latest part). */
  drop(part: TxOps): void {
    for (const sql of this.pending.splice(part.namesMark)) this.pendingIds.delete(sql)
  }

  /** @internal The id to write for `sql`, and whether a record ahead of this part already defines it. */
  nameFor(sql: string): { id: number; defined: boolean } | undefined {
    const known = this.names.id(sql)
    if (known !== undefined) return { id: known, defined: true }
    const pending = this.pendingIds.get(sql)
    if (pending !== undefined) return { id: pending, defined: true }
    const next = this.names.size + this.pending.length
    if (next >= MAX_NAMES || sql.length > MAX_NAMED_SQL_CHARS) return undefined
    this.pendingIds.set(sql, next)
    this.pending.push(sql)
    return { id: next, defined: false }
  }

  /** The record's bytes under `seq`, ready to go into a frame. Adopting its names is a separate step. */
  finish(seq: number): Buffer {
    const { generation, forgetDue } = this.names.state
    if (generation !== this.generation) {
      // A checkpoint's export must seal the open record before it resets the names.
      throw new DatabaseError('DB_FAILED', 'internal error: the journal dictionary was reset under an open record')
    }
    const header = Buffer.alloc(RECORD_HEADER_BYTES + (forgetDue ? 1 : 0))
    const total = this.bytesKept + (forgetDue ? 1 : 0)
    header.writeUInt32LE(total - 4, 0)
    header.writeBigUInt64LE(BigInt(seq), 4)
    header.writeUInt32LE(this.opsKept + (forgetDue ? 1 : 0), 12)
    if (forgetDue) header[RECORD_HEADER_BYTES] = OP_FORGET
    return Buffer.concat([header, ...this.parts], total)
  }

  /** Call once the sealed record is committed and queued: later records may now refer to its names. */
  adoptNames(): void {
    this.names.adopt(this.pending)
  }

  /**
   * The ops kept so far, decoded: what the tick's SQL transaction must hold. Used to rebuild it when
   * SQLite rolled all of it back (OR ROLLBACK, RAISE(ROLLBACK)) because of one function's statement.
   */
  keptOps(): JournalOp[] {
    const names = this.names.snapshot()
    const ops: JournalOp[] = []
    for (const part of this.parts) {
      const r = new ByteReader(part)
      while (!r.done) ops.push(...decodeOps(r, 1, names, 2, 0))
    }
    return ops
  }
}

/** The frame header for records that are written together; the caller writes it followed by the records. */
export function frameHeader(records: readonly Buffer[]): Buffer {
  let len = 0
  let crc = 0
  for (const r of records) {
    len += r.length
    crc = crc32(r, crc)
  }
  if (len > MAX_FRAME_BODY_BYTES) throw new DatabaseError('DB_MISUSE', `journal frame too large (${len} bytes)`)
  const h = Buffer.allocUnsafe(FRAME_HEADER_BYTES)
  h.writeUInt32LE(FRAME_MAGIC, 0)
  h.writeUInt32LE(len, 4)
  h.writeUInt32LE(crc, 8)
  return h
}

export type FrameCheck = { ok: true; bodyStart: number; bodyEnd: number } | { ok: false; reason: string }

/** Checks the frame starting at `offset` (magic, length, checksum) without decoding its records. */
export function checkFrame(buf: Buffer, offset: number): FrameCheck {
  if (offset + FRAME_HEADER_BYTES > buf.length) return { ok: false, reason: 'incomplete frame header' }
  if (buf.readUInt32LE(offset) !== FRAME_MAGIC) return { ok: false, reason: 'bad frame magic' }
  const len = buf.readUInt32LE(offset + 4)
  const bodyStart = offset + FRAME_HEADER_BYTES
  const bodyEnd = bodyStart + len
  if (len < RECORD_HEADER_BYTES || len > MAX_FRAME_BODY_BYTES) return { ok: false, reason: `implausible frame length ${len}` }
  if (bodyEnd > buf.length) return { ok: false, reason: 'frame extends past the end of the journal' }
  if (crc32(buf.subarray(bodyStart, bodyEnd)) !== buf.readUInt32LE(offset + 8)) return { ok: false, reason: 'checksum mismatch' }
  return { ok: true, bodyStart, bodyEnd }
}

export interface RecordRef {
  seq: number
  start: number
  end: number
}

/**
 * Splits a checked frame body into records. The checksum already matched, so a malformed body is not
 * a torn write but a bug or tampering: it throws DB_CORRUPT instead of being truncated away.
 */
export function frameRecords(buf: Buffer, bodyStart: number, bodyEnd: number): RecordRef[] {
  const refs: RecordRef[] = []
  let pos = bodyStart
  while (pos < bodyEnd) {
    if (pos + RECORD_HEADER_BYTES > bodyEnd) throw new DatabaseError('DB_CORRUPT', `journal frame at ${bodyStart} has a truncated record`)
    const end = pos + 4 + buf.readUInt32LE(pos)
    if (end > bodyEnd) throw new DatabaseError('DB_CORRUPT', `journal frame at ${bodyStart} has a record past its end`)
    refs.push({ seq: new ByteReader(buf, pos + 4, end).u64(), start: pos + 4, end })
    pos = end
  }
  return refs
}

/**
 * Decodes one record (from `frameRecords`) into the ops to replay. `names` is the file's dictionary
 * so far, which the record's definitions extend (and a forget op empties): decode every record of a
 * file in order, including those a snapshot already includes, so later ones find their names.
 */
export function decodeRecord(buf: Buffer, ref: RecordRef, names: string[], format: JournalFormat): DecodedRecord {
  const r = new ByteReader(buf, ref.start, ref.end)
  const seq = r.u64()
  const count = r.u32()
  const ops = decodeOps(r, count, names, format, seq)
  if (!r.done) throw new DatabaseError('DB_CORRUPT', `journal record ${seq} has trailing bytes`)
  return { seq, ops }
}

function decodeOps(r: ByteReader, count: number, names: string[], format: JournalFormat, seq: number): JournalOp[] {
  const ops: JournalOp[] = []
  for (let i = 0; i < count; i++) {
    const kind = r.u8()
    if (kind === OP_SCRIPT) {
      ops.push({ kind: 'script', sql: r.string() })
    } else if (kind === OP_STATEMENT) {
      ops.push({ kind: 'statement', sql: r.string(), params: readParams(r) })
    } else if (format >= 2 && kind === OP_DEFINE) {
      const id = r.u32()
      if (id !== names.length) throw new DatabaseError('DB_CORRUPT', `journal record ${seq} defines statement ${id} where ${names.length} was next`)
      const sql = r.string()
      names.push(sql)
      ops.push({ kind: 'statement', sql, params: readParams(r) })
    } else if (format >= 2 && kind === OP_NAMED) {
      const id = r.u32()
      const sql = names[id]
      if (sql === undefined) throw new DatabaseError('DB_CORRUPT', `journal record ${seq} refers to statement ${id}, which the journal has not defined`)
      ops.push({ kind: 'statement', sql, params: readParams(r) })
    } else if (format >= 2 && kind === OP_FORGET) {
      names.length = 0
    } else {
      throw new DatabaseError('DB_CORRUPT', `journal record ${seq} has unknown op kind ${kind}`)
    }
  }
  return ops
}

export function isPositional(params: SqlParams): params is readonly SqlValue[] {
  return Array.isArray(params)
}

/**
 * Rejects what sql.js would bind surprisingly or not at all (undefined, booleans, objects), naming the
 * parameter, before anything runs. Named keys must carry their SQL prefix, since sql.js silently
 * ignores a key it cannot match and the column would get NULL.
 */
export function validateParams(params: SqlParams | undefined): void {
  if (params === undefined) return
  if (isPositional(params)) {
    for (let i = 0; i < params.length; i++) checkValue(params[i], i)
    return
  }
  for (const [k, v] of Object.entries(params)) {
    if (!/^[:@$]/.test(k)) {
      throw new DatabaseError('DB_MISUSE', `named parameter "${k}" must include its prefix as in the SQL, e.g. ":${k}"`)
    }
    checkValue(v, k)
  }
}

/**
 * `at` is the parameter's index (0-based) or its name; the text naming it is built only for the error, since a
 * page of received messages binds thousands of values.
 */
function checkValue(v: unknown, at: number | string): asserts v is SqlValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || v instanceof Uint8Array) return
  const what = typeof at === 'number' ? `parameter ${at + 1}` : `parameter ${at}`
  throw new DatabaseError('DB_MISUSE', `${what} is ${v === undefined ? 'undefined' : typeof v}; bind string, number, bigint, Uint8Array or null`)
}

function writeParams(w: ByteWriter, params: SqlParams | undefined): void {
  if (params === undefined) {
    w.u8(SHAPE_NONE)
  } else if (isPositional(params)) {
    w.u8(SHAPE_POSITIONAL)
    w.u32(params.length)
    for (let i = 0; i < params.length; i++) writeValue(w, params[i], i)
  } else {
    const keys = Object.keys(params)
    w.u8(SHAPE_NAMED)
    w.u32(keys.length)
    for (const k of keys) {
      w.string(k)
      writeValue(w, params[k], k)
    }
  }
}

function writeValue(w: ByteWriter, v: unknown, at: number | string): void {
  checkValue(v, at)
  if (v === null) w.u8(TAG_NULL)
  else if (typeof v === 'number') {
    w.u8(TAG_NUMBER)
    w.f64(v)
  } else if (typeof v === 'bigint') {
    w.u8(TAG_BIGINT)
    w.string(v.toString())
  } else if (typeof v === 'string') {
    w.u8(TAG_TEXT)
    w.string(v)
  } else {
    w.u8(TAG_BLOB)
    w.bytes(v)
  }
}

function readParams(r: ByteReader): SqlParams | undefined {
  const shape = r.u8()
  if (shape === SHAPE_NONE) return undefined
  const n = r.u32()
  if (shape === SHAPE_POSITIONAL) {
    const values: SqlValue[] = []
    for (let i = 0; i < n; i++) values.push(readValue(r))
    return values
  }
  if (shape !== SHAPE_NAMED) throw new DatabaseError('DB_CORRUPT', `unknown parameter shape ${shape}`)
  const named: Record<string, SqlValue> = {}
  for (let i = 0; i < n; i++) {
    const k = r.string()
    named[k] = readValue(r)
  }
  return named
}

function readValue(r: ByteReader): SqlValue {
  const tag = r.u8()
  switch (tag) {
    case TAG_NULL:
      return null
    case TAG_NUMBER:
      return r.f64()
    case TAG_BIGINT:
      return BigInt(r.string())
    case TAG_TEXT:
      return r.string()
    case TAG_BLOB:
      return r.bytes()
    default:
      throw new DatabaseError('DB_CORRUPT', `unknown value tag ${tag}`)
  }
}
