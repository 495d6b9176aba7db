/**
 * The few ASN.1 DER encodings a self-signed X.509 certificate needs (network/tls.ts), written directly: a general
 * X.509 library takes ~0.1–0.2 s to load and ~25 ms a certificate, in the process that starts the network, before any
 * member can start.
 */

const lengthBytes = (n: number): Buffer => {
  if (n < 0x80) return Buffer.of(n)
  const bytes: number[] = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}

/** Tag, length, value. */
export const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content)
  return Buffer.concat([Buffer.of(tag), lengthBytes(body.length), body])
}

export const sequence = (...items: Buffer[]): Buffer => tlv(0x30, ...items)
export const set = (...items: Buffer[]): Buffer => tlv(0x31, ...items)
export const boolean = (v: boolean): Buffer => tlv(0x01, Buffer.of(v ? 0xff : 0))
export const octetString = (v: Buffer): Buffer => tlv(0x04, v)
/** A BIT STRING of whole bytes, or of `unusedBits` fewer bits. */
export const bitString = (v: Buffer, unusedBits = 0): Buffer => tlv(0x03, Buffer.of(unusedBits), v)
export const utf8String = (v: string): Buffer => tlv(0x0c, Buffer.from(v, 'utf8'))
/** An EXPLICIT context-specific tag around `inner`. */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 + n, inner)
/** An IMPLICIT context-specific primitive tag. */
export const implicit = (n: number, value: Buffer): Buffer => tlv(0x80 + n, value)

/** A non-negative INTEGER from its big-endian bytes, in DER's minimal form. */
export function unsignedInteger(bytes: Buffer): Buffer {
  let i = 0
  while (i < bytes.length - 1 && bytes[i] === 0) i++
  const v = bytes.subarray(i)
  return tlv(0x02, v[0]! & 0x80 ? Buffer.concat([Buffer.of(0), v]) : v)
}

export function objectIdentifier(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number)
  const out = [40 * a! + b!]
  for (const n of rest) {
    const groups: number[] = [n & 0x7f]
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) groups.unshift((v & 0x7f) | 0x80)
    out.push(...groups)
  }
  return tlv(0x06, Buffer.from(out))
}

/** A certificate's time: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280, 4.1.2.5). */
export function time(d: Date): Buffer {
  const iso = d.toISOString() // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii')) : tlv(0x18, Buffer.from(digits, 'ascii'))
}
