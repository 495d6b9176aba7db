import { createHash } from 'node:crypto'
import http from 'node:http'
import type { MemberDescription } from '../../network/description.js'
import { nsBase, type ApiData } from './api.js'

/** A data record with its blob, as the upload and data routes answer. */
export interface ApiBlobData extends ApiData {
  datatype?: { name: string; version: string }
  blob?: { hash: string; size: number; name: string; public?: string }
}

/**
 * Deterministic pseudo-random bytes (xorshift32, 1 MiB at a time through a Uint32Array), produced chunk by chunk
 * and hashed as they go: a test or benchmark sends gigabytes and knows their sha256 without ever holding them.
 */
export function patternBytes(size: number, seed = 1): { stream: AsyncIterable<Buffer>; digest: () => string } {
  const MiB = 1024 * 1024
  const sha = createHash('sha256')
  let finished = false
  async function* gen(): AsyncGenerator<Buffer> {
    let x = seed >>> 0 || 1
    for (let left = size; left > 0; ) {
      const n = Math.min(MiB, left)
      const buf = Buffer.allocUnsafe(MiB)
      const words = new Uint32Array(buf.buffer, buf.byteOffset, MiB / 4)
      for (let i = 0; i < words.length; i++) {
        x ^= x << 13
        x ^= x >>> 17
        x ^= x << 5
        words[i] = x >>> 0
      }
      const out = n === MiB ? buf : buf.subarray(0, n)
      sha.update(out)
      left -= n
      yield out
    }
    finished = true
  }
  return {
    stream: gen(),
    digest: () => {
      if (!finished) throw new Error('the stream was not read to its end')
      return sha.digest('hex')
    },
  }
}

/**
 * Uploads a blob as FireFly's SDK does: multipart form, the fields first, then the `file` part, streamed with
 * backpressure through node:http so a blob of any size leaves the test's memory flat.
 */
export async function uploadBlob(
  m: MemberDescription,
  ns: string,
  content: AsyncIterable<Buffer> | Buffer,
  opts: { filename?: string; mimetype?: string; autometa?: boolean; metadata?: string; datatype?: { name: string; version: string } } = {},
): Promise<{ status: number; body: ApiBlobData & { error?: string } }> {
  const boundary = `----parley${Math.random().toString(16).slice(2)}`
  const fields: [string, string][] = []
  if (opts.autometa !== undefined) fields.push(['autometa', String(opts.autometa)])
  if (opts.metadata !== undefined) fields.push(['metadata', opts.metadata])
  if (opts.datatype) fields.push(['datatype.name', opts.datatype.name], ['datatype.version', opts.datatype.version])
  const head =
    fields.map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${opts.filename ?? 'blob.bin'}"\r\nContent-Type: ${opts.mimetype ?? 'application/octet-stream'}\r\n\r\n`
  const tail = `\r\n--${boundary}--\r\n`
  const url = new URL(`${nsBase(m, ns)}/data`)
  return new Promise((resolve, reject) => {
    const req = http.request(
      { method: 'POST', hostname: url.hostname, port: url.port, path: url.pathname, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as ApiBlobData })
          } catch {
            reject(new Error(`upload answered ${res.statusCode} with non-JSON: ${text.slice(0, 200)}`))
          }
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    void (async () => {
      const write = (b: Buffer | string) => (req.write(b) ? Promise.resolve() : new Promise<void>((r) => req.once('drain', () => r())))
      await write(head)
      if (Buffer.isBuffer(content)) await write(content)
      else for await (const c of content) await write(c)
      req.end(tail)
    })().catch((err: unknown) => {
      req.destroy(err as Error)
      reject(err as Error)
    })
  })
}

/** Downloads a member's copy of a blob, hashing it as it streams; answers the headers that describe it too. */
export async function downloadBlob(m: MemberDescription, ns: string, dataId: string): Promise<{ status: number; sha256: string; size: number; headers: Headers }> {
  const res = await fetch(`${nsBase(m, ns)}/data/${dataId}/blob`)
  const sha = createHash('sha256')
  let size = 0
  if (res.body) {
    for await (const chunk of res.body) {
      sha.update(chunk as Uint8Array)
      size += (chunk as Uint8Array).length
    }
  }
  return { status: res.status, sha256: sha.digest('hex'), size, headers: res.headers }
}
