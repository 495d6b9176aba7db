import type http from 'node:http'
import type https from 'node:https'
import { httpModule } from '../core/http-call.js'

/**
 * Downloads from the IPFS gateway over plain `node:http`, in place of fetch: loading fetch's undici cost a member
 * ~0.1 s of CPU at every start, and a download through fetch went through WHATWG streams chunk by chunk. Over a
 * keep-alive agent, a member fetching batch after batch from the gateway reuses its connections.
 */

export interface HttpStatusError extends Error {
  status: number
}

/** A transfer (download or upload) that moves no byte for this long fails, so that the caller's retry takes over (fetch had 300 s). */
export const IDLE_TIMEOUT_MS = 60_000
/** A gateway may redirect (Kubo's own sends `localhost` paths to its subdomain gateway); fetch followed up to 20. */
const MAX_REDIRECTS = 5

function isReset(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ECONNRESET' || code === 'EPIPE'
}

interface Head {
  res: http.IncomingMessage
  /** What ended the transfer from the request's side once the answer had begun (the idle timeout, say), if anything. */
  failure(): Error | undefined
}

/**
 * The answer's head to a GET, following redirects. A reused keep-alive connection that the server closed just as
 * the request went out is retried once on a fresh one (it read nothing of the request), as Node advises.
 */
function getHead(url: URL, home: string, agent: http.Agent | https.Agent, signal: AbortSignal | undefined, idleMs: number, redirects = 0, retried = false): Promise<Head> {
  return new Promise<Head>((resolve, reject) => {
    let answered = false
    let late: Error | undefined
    // A redirect to another origin goes without this origin's agent.
    const req = httpModule(url).get(url, { ...(url.origin === home ? { agent } : {}), ...(signal ? { signal } : {}) }, (res) => {
      answered = true
      const status = res.statusCode ?? 0
      const location = res.headers.location
      if (status >= 300 && status < 400 && status !== 304 && location !== undefined) {
        res.resume()
        if (redirects >= MAX_REDIRECTS) return reject(new Error(`more than ${MAX_REDIRECTS} redirects (the last to ${location})`))
        return resolve(getHead(new URL(location, url), home, agent, signal, idleMs, redirects + 1))
      }
      resolve({ res, failure: () => late })
    })
    req.setTimeout(idleMs, () => req.destroy(new Error(`the gateway sent nothing for ${idleMs / 1000} s`)))
    req.on('error', (err) => {
      // After the answer began, the reader learns of it through the response stream.
      if (answered) {
        late = err
        return
      }
      if (signal?.aborted) return reject(signal.reason)
      if (!retried && req.reusedSocket && isReset(err)) return resolve(getHead(url, home, agent, signal, idleMs, redirects, true))
      reject(err)
    })
  })
}

/**
 * The body of a GET, chunk by chunk as it arrives. Throws an HttpStatusError for a status outside 2xx (the answer
 * discarded), the signal's reason once `signal` aborts (before or during the transfer), and an error once no byte
 * has moved for `idleMs`.
 */
export async function* streamGet(url: string, opts: { agent: http.Agent | https.Agent; signal?: AbortSignal; idleMs?: number }): AsyncGenerator<Uint8Array> {
  const { signal } = opts
  signal?.throwIfAborted()
  const u = new URL(url)
  const { res, failure } = await getHead(u, u.origin, opts.agent, signal, opts.idleMs ?? IDLE_TIMEOUT_MS)
  if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) {
    res.destroy()
    const err = new Error(`answered ${res.statusCode}`) as HttpStatusError
    err.status = res.statusCode ?? 0
    throw err
  }
  try {
    for await (const chunk of res) yield chunk as Buffer
  } catch (err) {
    throw signal?.aborted ? signal.reason : (failure() ?? err)
  } finally {
    // A consumer that stopped early (break, throw) leaves the rest unread: the connection cannot be reused.
    if (!res.complete) res.destroy()
  }
}
