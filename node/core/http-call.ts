import http from 'node:http'
import https from 'node:https'

/** Node's client module for a URL's scheme: `node:https` for https, `node:http` otherwise. */
export function httpModule(url: URL): typeof http | typeof https {
  return url.protocol === 'https:' ? https : http
}

/**
 * One HTTP request, answered with its status and body. Through node:http rather than fetch: fetch (undici) costs
 * several times the CPU per call and ~0.15 s to load. One connection per call (no keep-alive): for probes and
 * polls of a process that may have restarted or closed an idle connection, which must never fail a call that a
 * fresh connection would not. Past `timeoutMs` it rejects with the timeout's own reason, a `TimeoutError` (as fetch
 * does), not the `AbortError` node:http reports for any abort.
 */
export function httpCall(url: string, opts: { method?: string; body?: string; timeoutMs: number }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = opts.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(opts.body)) }
    const signal = AbortSignal.timeout(opts.timeoutMs)
    const fail = (err: Error): void => reject(signal.aborted ? (signal.reason as Error) : err)
    const req = httpModule(new URL(url)).request(url, { method: opts.method ?? 'GET', headers, agent: false, signal }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', fail)
    })
    req.on('error', fail)
    req.end(opts.body)
  })
}
