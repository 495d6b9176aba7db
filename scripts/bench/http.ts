/**
 * The benchmark's HTTP client: loopback only, every request bounded in time. Plain `node:http` over keep-alive
 * sockets rather than global fetch: fetch (undici, WHATWG streams, an AbortSignal per request) cost this process
 * a large share of a core on a 2-core machine, CPU taken from the nodes being measured.
 */
import http from 'node:http'

const DEFAULT_TIMEOUT_MS = 30_000

/**
 * One pool for every origin. Until `sizeClient` says otherwise, room for --concurrency's ceiling: a POST that
 * queued inside the client for a socket would have that wait counted as the node's.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 })

/** Sockets per origin: at least the most requests the benchmark ever has in flight to one member. */
export function sizeClient(maxSockets: number): void {
  agent.maxSockets = maxSockets
}

function loopbackUrl(url: string): URL {
  const u = new URL(url)
  if (u.hostname !== '127.0.0.1') throw new Error(`the benchmark only talks to 127.0.0.1, not ${u.hostname} (${url})`)
  return u
}

export interface HttpResult {
  status: number
  text: string
}

function isReset(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ECONNRESET' || code === 'EPIPE'
}

function send(u: URL, method: string, body: string | undefined, deadline: number, mayRetry: boolean): Promise<HttpResult> {
  return new Promise<HttpResult>((resolve, reject) => {
    let settled = false
    let responded = false
    const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    const req = http.request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, headers, agent })
    const timeoutMs = Math.max(1, deadline - Date.now())
    // One timer for the whole exchange (the socket's idle timeout would let a trickling answer run on forever).
    const timer = setTimeout(() => req.destroy(new Error(`${method} ${u.href} timed out after ${timeoutMs} ms`)), timeoutMs)
    const fail = (err: Error): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // The server may close an idle keep-alive socket just as a request goes out on it; it read nothing of that
      // request, so sending it once more on a fresh socket neither loses nor duplicates it (Node's own advice).
      if (mayRetry && !responded && req.reusedSocket && isReset(err)) send(u, method, body, deadline, false).then(resolve, reject)
      else reject(err)
    }
    req.once('error', fail)
    req.once('response', (res) => {
      responded = true
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.once('error', fail)
      res.once('end', () => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    req.end(body)
  })
}

export async function postJson(url: string, body: unknown, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  return send(loopbackUrl(url), 'POST', JSON.stringify(body), Date.now() + timeoutMs, true)
}

/** A GET answered with any status (a poller may expect 404 for a while). */
export async function get(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  return send(loopbackUrl(url), 'GET', undefined, Date.now() + timeoutMs, true)
}

/** A DELETE answered with any status. */
export async function del(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  return send(loopbackUrl(url), 'DELETE', undefined, Date.now() + timeoutMs, true)
}

export async function getJson<T>(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  const res = await get(url, timeoutMs)
  if (res.status < 200 || res.status > 299) throw new Error(`GET ${url} answered ${res.status}: ${res.text.slice(0, 300)}`)
  return JSON.parse(res.text) as T
}

export { sleep } from '../../node/core/backoff.js'
