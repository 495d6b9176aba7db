import { expect } from 'chai'
import { ByteReader, ByteWriter } from '../../../../node/db/byte-buffer.js'

/** What ByteWriter.string has always written: the UTF-8 byte count, then Buffer's UTF-8 bytes. */
function expected(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8')
  const head = Buffer.alloc(4)
  head.writeUInt32LE(bytes.length)
  return Buffer.concat([head, bytes])
}

describe('ByteWriter.string', () => {
  const texts = [
    '',
    'a',
    '5f0c1b6e-3c1a-4f7e-9a8e-6b0f1c2d3e4f',
    '\u007f',
    '\u0080',
    'caf\u00e9',
    '\u00e9t\u00e9',
    'x'.repeat(255) + '\u00e9',
    'x'.repeat(256),
    'x'.repeat(256) + '\u00e9',
    'x'.repeat(257),
    'x'.repeat(5000),
    'emoji \u{1f600} here',
    'lone \ud800 surrogate',
    'trailing lone \udfff',
    '\u0000nul\u0000',
    '\u4e2d\u6587'.repeat(100),
  ]

  it('writes the same bytes as Buffer does, after other values, ASCII or not, short or long', () => {
    for (const s of texts) {
      // A small initial size makes the writer grow inside the loop's text as well.
      const w = new ByteWriter(8)
      w.u8(7)
      w.string(s)
      w.u8(9)
      expect(w.take().equals(Buffer.concat([Buffer.from([7]), expected(s), Buffer.from([9])])), JSON.stringify(s.slice(0, 20))).to.equal(true)
    }
  })

  it('reads back what it wrote, one text after another', () => {
    const w = new ByteWriter(1)
    for (const s of texts) w.string(s)
    const r = new ByteReader(w.take())
    for (const s of texts) expect(r.string()).to.equal(Buffer.from(s, 'utf8').toString('utf8'))
  })

  it('allocates at its first write, whatever the initial size (zero included), and takes nothing when nothing was written', () => {
    expect(new ByteWriter(2048).take().length).to.equal(0)
    for (const initial of [0, 1, 2048]) {
      const w = new ByteWriter(initial)
      w.skip(0)
      w.bytes(new Uint8Array(0))
      w.u32(0xdeadbeef)
      w.string('after')
      const r = new ByteReader(w.take())
      expect(r.u32()).to.equal(0)
      expect(r.u32()).to.equal(0xdeadbeef)
      expect(r.string()).to.equal('after')
    }
  })
})
