import { DatabaseError } from './errors.js'

/** Text up to this many UTF-16 units is tried as ASCII first (see asciiInto), and its UTF-8 size bounded, not counted. */
const SHORT_TEXT = 256

/**
 * Copies `s` into `buf` at `at` if it is all ASCII, and says whether it was. Most text written here is short ASCII
 * (ids, hashes, timestamps, keys): copied by a loop it skips the calls into C++ (byteLength, then write) that cost
 * more than the copy. Bytes past the first non-ASCII character are left as they were; the caller writes the text
 * the general way then.
 */
function asciiInto(buf: Buffer, s: string, at: number): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c > 0x7f) return false
    buf[at + i] = c
  }
  return true
}

/** Room for `s` encoded as UTF-8: at most 3 bytes a unit for short text (no call into C++), counted for longer text. */
export function utf8Room(s: string): number {
  return s.length <= SHORT_TEXT ? s.length * 3 : Buffer.byteLength(s, 'utf8')
}

/** Writes `s` as UTF-8 into `buf` at `at`, within `room` bytes (utf8Room), short ASCII by a loop; answers the bytes written. */
export function utf8Into(buf: Buffer, s: string, at: number, room: number): number {
  if (s.length <= SHORT_TEXT && asciiInto(buf, s, at)) return s.length
  return buf.write(s, at, room, 'utf8')
}

const EMPTY = Buffer.alloc(0)

/** A growable little-endian byte writer, so a journal record is built in one buffer without copies per field. */
export class ByteWriter {
  private buf = EMPTY
  private len = 0

  /** `initial`: the first buffer's size, allocated at the first write (a writer that writes nothing costs nothing). */
  constructor(private readonly initial = 256) {}

  get length(): number {
    return this.len
  }

  /** Reserves `n` bytes to be filled later with `patchU32`/`patchU64` (headers known only at the end). */
  skip(n: number): void {
    this.ensure(n)
    this.buf.fill(0, this.len, this.len + n)
    this.len += n
  }

  u8(v: number): void {
    this.ensure(1)
    this.buf[this.len++] = v
  }

  u32(v: number): void {
    this.ensure(4)
    this.buf.writeUInt32LE(v, this.len)
    this.len += 4
  }

  f64(v: number): void {
    this.ensure(8)
    this.buf.writeDoubleLE(v, this.len)
    this.len += 8
  }

  string(s: string): void {
    const room = utf8Room(s)
    this.ensure(4 + room)
    const n = utf8Into(this.buf, s, this.len + 4, room)
    this.buf.writeUInt32LE(n, this.len)
    this.len += 4 + n
  }

  bytes(b: Uint8Array): void {
    this.u32(b.length)
    this.ensure(b.length)
    this.buf.set(b, this.len)
    this.len += b.length
  }

  patchU32(offset: number, v: number): void {
    this.buf.writeUInt32LE(v, offset)
  }

  patchU64(offset: number, v: number): void {
    this.buf.writeBigUInt64LE(BigInt(v), offset)
  }

  /** The written bytes (a view, not a copy: the writer must not be used afterwards). */
  take(): Buffer {
    return this.buf.subarray(0, this.len)
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return
    let size = Math.max(this.buf.length * 2, this.initial, 1)
    while (size < this.len + n) size *= 2
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.len)
    this.buf = next
  }
}

/** Reads what ByteWriter wrote; every read is bounds-checked because journal bytes come from disk. */
export class ByteReader {
  private pos: number

  constructor(
    private readonly buf: Buffer,
    start = 0,
    private readonly end = buf.length,
  ) {
    this.pos = start
  }

  get done(): boolean {
    return this.pos >= this.end
  }

  u8(): number {
    this.need(1)
    return this.buf[this.pos++] as number
  }

  u32(): number {
    this.need(4)
    const v = this.buf.readUInt32LE(this.pos)
    this.pos += 4
    return v
  }

  u64(): number {
    this.need(8)
    const v = this.buf.readBigUInt64LE(this.pos)
    this.pos += 8
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed('sequence number out of range')
    return Number(v)
  }

  f64(): number {
    this.need(8)
    const v = this.buf.readDoubleLE(this.pos)
    this.pos += 8
    return v
  }

  string(): string {
    const n = this.u32()
    this.need(n)
    const s = this.buf.toString('utf8', this.pos, this.pos + n)
    this.pos += n
    return s
  }

  /** A copy, so a decoded value never aliases the (large) journal buffer. */
  bytes(): Uint8Array {
    const n = this.u32()
    this.need(n)
    const b = new Uint8Array(n)
    b.set(this.buf.subarray(this.pos, this.pos + n))
    this.pos += n
    return b
  }

  private need(n: number): void {
    if (this.pos + n > this.end) throw malformed('record ends early')
  }
}

function malformed(what: string): DatabaseError {
  return new DatabaseError('DB_CORRUPT', `journal record is malformed: ${what}`)
}
