/** `b` in pieces of `size` bytes, as a stream delivers it. */
export async function* chunksOf(b: Buffer, size = 64 * 1024): AsyncIterable<Uint8Array> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size)
}

/** Everything a stream delivers, in one buffer. */
export async function collect(source: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for await (const chunk of source) parts.push(chunk)
  return Buffer.concat(parts)
}
