import http from 'node:http'
import https from 'node:https'

/**
 * Plain `node:http` calls to the IPFS endpoints, in place of fetch and kubo-rpc-client: loading fetch's undici cost a
 * member ~0.1 s of CPU at every start, kubo-rpc-client was 0.5 MB of bundle for one call, and a download through
 * fetch went through WHATWG streams chunk by chunk. Over a keep-alive agent, a member fetching batch after batch
 * from the gateway reuses its connections.
 */

export interface HttpStatusError extends Error {
  status: number
}

function clientOf(url: URL): typeof http | typeof https {
  return url.protocol === 'https:' ? https : http
}

/**
 * The body of a GET, chunk by chunk as it arrives. Rejects with `notOk(status, text)`'s error for a status outside
 * 2xx (reading at most a few KB of the answer), and with the signal's reason once `signal` aborts, before or
 * during the transfer.
 */
export async function* streamGet(url: string, opts: { agent: http.Agent | https.Agent; signal?: AbortSignal }): AsyncGenerator<Uint8Array> {
  const { signal } = opts
  signal?.throwIfAborted()
  const u = new URL(url)
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = clientOf(u).get(u, { agent: opts.agent, ...(signal ? { signal } : {}) }, resolve)
    req.on('error', (err) => reject(signal?.aborted ? signal.reason : err))
  })
  if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) {
    res.destroy()
    const err = new Error(`answered ${res.statusCode}`) as HttpStatusError
    err.status = res.statusCode ?? 0
    throw err
  }
  try {
    for await (const chunk of res) yield chunk as Buffer
  } catch (err) {
    throw signal?.aborted ? signal.reason : err
  } finally {
    // A consumer that stopped early (break, throw) leaves the rest unread: the connection cannot be reused.
    if (!res.complete) res.destroy()
  }
}

/** POSTs nothing and parses the JSON answer (the Kubo RPC API's calls are all POST), within `timeoutMs`. */
export function postForJson(url: string, timeoutMs: number): Promise<unknown> {
  const u = new URL(url)
  return new Promise<unknown>((resolve, reject) => {
    const req = clientOf(u).request(u, { method: 'POST', signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        if (res.statusCode !== 200) return reject(new Error(`${u.pathname} answered ${res.statusCode}: ${text.slice(0, 300)}`))
        try {
          resolve(JSON.parse(text))
        } catch {
          reject(new Error(`${u.pathname} answered something that is not JSON: ${text.slice(0, 200)}`))
        }
      })
    })
    req.on('error', (err) => reject(err.name === 'AbortError' ? new Error(`no answer within ${timeoutMs} ms`) : err))
    req.end()
  })
}
