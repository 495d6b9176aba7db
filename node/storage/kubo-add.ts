import { randomUUID } from 'node:crypto'
import { httpModule } from '../core/http-call.js'
import { IDLE_TIMEOUT_MS } from './ipfs-http.js'

/** The URL of a Kubo RPC call (`path` after `/api/v0/`) on the API at `api`, with or without its trailing slash. */
export function kuboApiUrl(api: string, path: string): URL {
  return new URL(`${api.replace(/\/$/, '')}/api/v0/${path}`)
}

/**
 * Kubo's `POST /api/v0/add` for one file, streamed with backpressure: the body is written only as fast as the
 * daemon reads it, so memory stays at a chunk or two whatever the size. (kubo-rpc-client's Node path buffers a
 * whole multi-gigabyte body before sending it.) `query` carries Kubo's add options; answers the root CID.
 */
export async function kuboAdd(api: string, content: Uint8Array | AsyncIterable<Uint8Array>, name: string, query: Record<string, string>): Promise<string> {
  const url = kuboApiUrl(api, 'add')
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v)
  const boundary = `parley-${randomUUID()}`
  const head = Buffer.from(
    // A `/` in the name makes Kubo wrap the file in directories and answer the outer one's CID: the name is only a
    // label, so it goes without its path.
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${encodeURIComponent(name.replaceAll('/', '_'))}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const client = httpModule(url)

  return new Promise<string>((resolve, reject) => {
    let settled = false
    const fail = (err: Error): void => {
      if (settled) return
      settled = true
      req.destroy()
      reject(err)
    }
    const req = client.request(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', fail)
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        if (res.statusCode !== 200) return fail(new Error(`ipfs add answered ${res.statusCode}: ${text.slice(0, 300)}`))
        // NDJSON, one line per added entry (and progress lines when asked); the last entry with a Hash is the root.
        const lines = text.split('\n').filter((l) => l.trim() !== '')
        let cid: string | undefined
        for (const l of lines) {
          try {
            const o = JSON.parse(l) as { Hash?: unknown }
            if (typeof o.Hash === 'string') cid = o.Hash
          } catch {
            return fail(new Error(`ipfs add answered a line that is not JSON: ${l.slice(0, 200)}`))
          }
        }
        if (!cid) return fail(new Error(`ipfs add answered no CID: ${text.slice(0, 300)}`))
        settled = true
        resolve(cid)
      })
    })
    req.setTimeout(IDLE_TIMEOUT_MS, () => fail(new Error(`ipfs add made no progress for ${IDLE_TIMEOUT_MS / 1000} s`)))
    req.on('error', fail)

    const write = (b: Uint8Array): Promise<void> =>
      req.destroyed
        ? Promise.reject(new Error('ipfs add: the request was abandoned'))
        : req.write(b)
        ? Promise.resolve()
        : new Promise<void>((r, j) => {
            const onDrain = (): void => {
              req.off('close', onClose)
              r()
            }
            const onClose = (): void => {
              req.off('drain', onDrain)
              j(new Error('ipfs add: the connection closed while sending'))
            }
            req.once('drain', onDrain)
            req.once('close', onClose)
          })
    void (async () => {
      await write(head)
      if (content instanceof Uint8Array) await write(content)
      else for await (const chunk of content) await write(chunk)
      req.end(tail)
    })().catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))))
  })
}
