import { crc32 } from 'node:zlib'
import { ByteReader, ByteWriter } from './byte-buffer.js'
import { DatabaseError } from './errors.js'
import type { SqlParams, SqlValue } from './types.js'

/**
 * The journal's binary layout. A record is one committed transaction: the statements it ran and their
 * bound values. A frame is one group-commit flush: the records written by one write + one fdatasync.
 *
 *   frame:   u32 magic | u32 body length | u32 crc32(body) | body = records
 *   record:  u32 length | u64 seq | u32 op count | ops
 *   op:      u8 kind (1 statement, 2 script) | string sql | [statement only] u8 shape | u32 n | n × ([name] value)
 *   value:   u8 tag (0 null, 1 float64, 2 bigint as decimal text, 3 text, 4 blob) | data
 *
 * Why frames are flushes: a crash can tear only the last, unacknowledged flush, in any pattern of
 * pages. With one checksum per flush, a torn flush is one bad frame at the end, while a valid frame
 * after a bad one can only mean damage to data that had been acknowledged.
 */

export const FRAME_MAGIC = 0x5259_4c50 // "PLYR" little-endian
export const FRAME_HEADER_BYTES = 12
/** Bigger records or frames are refused when written rather than written as something replay would reject. */
export const MAX_FRAME_BODY_BYTES = 1024 * 1024 * 1024
const RECORD_HEADER_BYTES = 4 + 8 + 4

const OP_STATEMENT = 1
const OP_SCRIPT = 2
const SHAPE_NONE = 0
const SHAPE_POSITIONAL = 1
const SHAPE_NAMED = 2
const TAG_NULL = 0
const TAG_NUMBER = 1
const TAG_BIGINT = 2
const TAG_TEXT = 3
const TAG_BLOB = 4

export type JournalOp =
  | { kind: 'statement'; sql: string; params: SqlParams | undefined }
  | { kind: 'script'; sql: string }

export interface DecodedRecord {
  seq: number
  ops: JournalOp[]
}

/**
 * Accumulates a transaction's ops as they run. Values are encoded at `run` time, not at commit,
 * so a caller that reuses a buffer after binding it cannot change what the journal says was written.
 */
export class RecordBuilder {
  private readonly w = new ByteWriter()
  private ops = 0

  constructor() {
    this.w.skip(RECORD_HEADER_BYTES)
  }

  get opCount(): number {
    return this.ops
  }

  addStatement(sql: string, params: SqlParams | undefined): void {
    this.w.u8(OP_STATEMENT)
    this.w.string(sql)
    if (params === undefined) {
      this.w.u8(SHAPE_NONE)
    } else if (isPositional(params)) {
      this.w.u8(SHAPE_POSITIONAL)
      this.w.u32(params.length)
      params.forEach((v, i) => writeValue(this.w, v, `parameter ${i + 1}`))
    } else {
      const keys = Object.keys(params)
      this.w.u8(SHAPE_NAMED)
      this.w.u32(keys.length)
      for (const k of keys) {
        this.w.string(k)
        writeValue(this.w, params[k], `parameter ${k}`)
      }
    }
    this.ops++
  }

  addScript(sql: string): void {
    this.w.u8(OP_SCRIPT)
    this.w.string(sql)
    this.ops++
  }

  /** Seals the record with its sequence number; returns its bytes, ready to go into a frame. */
  finish(seq: number): Buffer {
    const len = this.w.length - 4
    if (len > MAX_FRAME_BODY_BYTES) {
      throw new DatabaseError('DB_MISUSE', `transaction too large for one journal record (${len} bytes)`)
    }
    this.w.patchU32(0, len)
    this.w.patchU64(4, seq)
    this.w.patchU32(12, this.ops)
    return this.w.take()
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

/** Decodes one record (from `frameRecords`) into the ops to replay. */
export function decodeRecord(buf: Buffer, ref: RecordRef): DecodedRecord {
  const r = new ByteReader(buf, ref.start, ref.end)
  const seq = r.u64()
  const count = r.u32()
  const ops: JournalOp[] = []
  for (let i = 0; i < count; i++) {
    const kind = r.u8()
    const sql = r.string()
    if (kind === OP_SCRIPT) {
      ops.push({ kind: 'script', sql })
    } else if (kind === OP_STATEMENT) {
      ops.push({ kind: 'statement', sql, params: readParams(r) })
    } else {
      throw new DatabaseError('DB_CORRUPT', `journal record ${seq} has unknown op kind ${kind}`)
    }
  }
  if (!r.done) throw new DatabaseError('DB_CORRUPT', `journal record ${seq} has trailing bytes`)
  return { seq, ops }
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
    params.forEach((v, i) => checkValue(v, `parameter ${i + 1}`))
    return
  }
  for (const [k, v] of Object.entries(params)) {
    if (!/^[:@$]/.test(k)) {
      throw new DatabaseError('DB_MISUSE', `named parameter "${k}" must include its prefix as in the SQL, e.g. ":${k}"`)
    }
    checkValue(v, `parameter ${k}`)
  }
}

function checkValue(v: unknown, what: string): asserts v is SqlValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || v instanceof Uint8Array) return
  throw new DatabaseError('DB_MISUSE', `${what} is ${v === undefined ? 'undefined' : typeof v}; bind string, number, bigint, Uint8Array or null`)
}

function writeValue(w: ByteWriter, v: unknown, what: string): void {
  checkValue(v, what)
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
