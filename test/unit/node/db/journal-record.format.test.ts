import { expect } from 'chai'
import { DatabaseError } from '../../../../node/db/errors.js'
import { checkFrame, decodeRecord, frameHeader, frameRecords, RecordBuilder, StatementNames, type JournalFormat } from '../../../../node/db/journal-record.js'
import type { SqlParams } from '../../../../node/db/types.js'

/**
 * The journal's record and frame format at the module: what a record holds after it is written and read back (named
 * statements, inline ones, scripts, every value type, a forget op after a checkpoint), and what a reader says of a
 * frame or record it cannot trust, torn (answered) or malformed past a good checksum (thrown DB_CORRUPT).
 */
describe('db: journal records and frames', () => {
  /** One record of `ops` sealed under `seq` over `names`, its names adopted as the committer does. */
  function record(names: StatementNames, seq: number, ops: (['statement', string, SqlParams | undefined] | ['script', string])[]): Buffer {
    const b = new RecordBuilder(names)
    const part = b.begin()
    for (const op of ops) op[0] === 'script' ? part.addScript(op[1]) : part.addStatement(op[1], op[2])
    b.checkFits(part)
    b.keep(part)
    const bytes = b.finish(seq)
    b.adoptNames()
    return bytes
  }
  const frame = (...records: Buffer[]) => Buffer.concat([frameHeader(records), ...records])
  /** Every record of a journal of frames, decoded in order over one dictionary. */
  function read(buf: Buffer, format: JournalFormat = 2): { seq: number; ops: unknown[] }[] {
    const names: string[] = []
    const out = []
    for (let at = 0; at < buf.length; ) {
      const f = checkFrame(buf, at)
      if (!f.ok) throw new Error(f.reason)
      for (const ref of frameRecords(buf, f.bodyStart, f.bodyEnd)) out.push(decodeRecord(buf, ref, names, format))
      at = f.bodyEnd
    }
    return out
  }
  const corrupt = (f: () => unknown): string => {
    try {
      f()
    } catch (err) {
      expect(err).to.be.instanceOf(DatabaseError)
      return (err as Error).message
    }
    return 'read'
  }

  it('reads back each op and value as written: named statements defined once, scripts, inline SQL', () => {
    const names = new StatementNames()
    const insert = 'INSERT INTO t (a, b) VALUES (?, ?)'
    const long = `SELECT '${'x'.repeat(16 * 1024)}'`
    const bytes = new Uint8Array([0, 1, 255])
    const first = record(names, 1, [
      ['statement', insert, [null, 1.5]],
      ['statement', insert, [12345678901234567890n, bytes]],
      ['script', 'CREATE TABLE u (a); CREATE TABLE v (b)'],
      ['statement', 'UPDATE t SET a = :a', { ':a': 'text' }],
      ['statement', long, undefined],
    ])
    const second = record(names, 2, [['statement', insert, ['again', 2]]])
    expect(names.snapshot(), 'the long text stays inline').to.deep.equal([insert, 'UPDATE t SET a = :a'])
    expect(read(frame(first, second))).to.deep.equal([
      {
        seq: 1,
        ops: [
          { kind: 'statement', sql: insert, params: [null, 1.5] },
          { kind: 'statement', sql: insert, params: [12345678901234567890n, bytes] },
          { kind: 'script', sql: 'CREATE TABLE u (a); CREATE TABLE v (b)' },
          { kind: 'statement', sql: 'UPDATE t SET a = :a', params: { ':a': 'text' } },
          { kind: 'statement', sql: long, params: undefined },
        ],
      },
      { seq: 2, ops: [{ kind: 'statement', sql: insert, params: ['again', 2] }] },
    ])
  })

  it('opens the first record after a checkpoint with a forget op, so its names start again', () => {
    const names = new StatementNames()
    const before = record(names, 1, [['statement', 'DELETE FROM t WHERE a = ?', [1]]])
    names.reset()
    const after = record(names, 2, [['statement', 'DELETE FROM u WHERE a = ?', [2]]])
    const next = record(names, 3, [['statement', 'DELETE FROM u WHERE a = ?', [3]]])
    expect(read(frame(before, after, next)).map((r) => r.ops)).to.deep.equal([
      [{ kind: 'statement', sql: 'DELETE FROM t WHERE a = ?', params: [1] }],
      [{ kind: 'statement', sql: 'DELETE FROM u WHERE a = ?', params: [2] }],
      [{ kind: 'statement', sql: 'DELETE FROM u WHERE a = ?', params: [3] }],
    ])
    expect(after.length, 'one byte more: the forget op').to.equal(before.length + 1)
  })

  it('refuses to seal a record whose dictionary a checkpoint reset under it', () => {
    const names = new StatementNames()
    const b = new RecordBuilder(names)
    names.reset()
    expect(corrupt(() => b.finish(1))).to.equal('DB_FAILED: internal error: the journal dictionary was reset under an open record')
  })

  it('answers why a frame cannot be trusted: a torn or foreign tail, without throwing', () => {
    const good = frame(record(new StatementNames(), 7, [['statement', 'DELETE FROM t', undefined]]))
    expect(checkFrame(good, 0)).to.deep.equal({ ok: true, bodyStart: 12, bodyEnd: good.length })
    expect(checkFrame(good.subarray(0, 8), 0)).to.deep.equal({ ok: false, reason: 'incomplete frame header' })
    const foreign = Buffer.from(good)
    foreign.writeUInt32LE(0xdeadbeef, 0)
    expect(checkFrame(foreign, 0)).to.deep.equal({ ok: false, reason: 'bad frame magic' })
    const tiny = Buffer.from(good)
    tiny.writeUInt32LE(3, 4)
    expect(checkFrame(tiny, 0)).to.deep.equal({ ok: false, reason: 'implausible frame length 3' })
    expect(checkFrame(good.subarray(0, good.length - 1), 0)).to.deep.equal({ ok: false, reason: 'frame extends past the end of the journal' })
    const flipped = Buffer.from(good)
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 1) ^ 1, flipped.length - 1)
    expect(checkFrame(flipped, 0)).to.deep.equal({ ok: false, reason: 'checksum mismatch' })
  })

  it('throws DB_CORRUPT for a record malformed behind a good checksum', () => {
    const names = new StatementNames()
    const rec = record(names, 9, [['statement', 'DELETE FROM t WHERE a = ?', [1]]])
    /** `rec` changed by `edit`, in a frame whose checksum matches it. */
    const framed = (edit: (b: Buffer) => Buffer) => frame(edit(Buffer.from(rec)))
    const body = (b: Buffer) => frameRecords(b, 12, b.length)

    expect(corrupt(() => body(framed((b) => b.subarray(0, 10))))).to.equal('DB_CORRUPT: journal frame at 12 has a truncated record')
    expect(corrupt(() => body(framed((b) => (b.writeUInt32LE(b.length, 0), b))))).to.equal('DB_CORRUPT: journal frame at 12 has a record past its end')
    const withTail = framed((b) => {
      const longer = Buffer.concat([b, Buffer.from([0])])
      longer.writeUInt32LE(longer.length - 4, 0)
      return longer
    })
    expect(corrupt(() => read(withTail))).to.equal('DB_CORRUPT: journal record 9 has trailing bytes')
    // The op kind sits right after the 16-byte header; its statement id after it.
    expect(corrupt(() => read(framed((b) => ((b[16] = 9), b))))).to.equal('DB_CORRUPT: journal record 9 has unknown op kind 9')
    expect(corrupt(() => read(framed((b) => (b.writeUInt32LE(5, 17), b))))).to.equal('DB_CORRUPT: journal record 9 defines statement 5 where 0 was next')
    // A format 1 journal has no named statements.
    expect(corrupt(() => read(frame(rec), 1))).to.equal('DB_CORRUPT: journal record 9 has unknown op kind 3')

    const later = record(names, 10, [['statement', 'DELETE FROM t WHERE a = ?', [2]]])
    // Read without the record that defined its statement (as a reader that skipped it would).
    expect(corrupt(() => read(frame(later)))).to.equal('DB_CORRUPT: journal record 10 refers to statement 0, which the journal has not defined')
  })

  it('throws DB_CORRUPT for an unknown parameter shape or value tag', () => {
    const rec = record(new StatementNames(), 4, [['statement', 'X', ['v']]])
    // Inline statement (a 1-character name is still named: define op, id, text), then the shape and the first tag.
    const shapeAt = 16 + 1 + 4 + 4 + 1
    expect(corrupt(() => read(frame(Buffer.from(rec).fill(7, shapeAt, shapeAt + 1))))).to.equal('DB_CORRUPT: unknown parameter shape 7')
    expect(corrupt(() => read(frame(Buffer.from(rec).fill(9, shapeAt + 5, shapeAt + 6))))).to.equal('DB_CORRUPT: unknown value tag 9')
  })
})
