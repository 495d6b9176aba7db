import { existsSync, readFileSync } from 'node:fs'
import { request } from 'node:http'

/**
 * One HTTP request to a local process, answered with its status and body. Through node:http rather than fetch: a
 * start polls every process ten times a second until it answers, and fetch costs several times the CPU per call,
 * CPU the processes starting beside it need. One connection per call (no keep-alive): a process that was restarted
 * or closed an idle connection must never make a call fail that a fresh connection would not.
 */
export function httpCall(url: string, opts: { method?: string; body?: string; timeoutMs: number }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = opts.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(opts.body)) }
    const req = request(url, { method: opts.method ?? 'GET', headers, agent: false, signal: AbortSignal.timeout(opts.timeoutMs) }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(opts.body)
  })
}

/** Whether `url` answers a GET (or `method`) with a 2xx. */
export async function answersOk(url: string, timeoutMs: number, method = 'GET'): Promise<boolean> {
  const { status } = await httpCall(url, { method, timeoutMs })
  return status >= 200 && status < 300
}

/** One JSON-RPC call; undefined when the endpoint is not answering yet. */
export async function rpcCall<T>(rpc: string, method: string, params: unknown[]): Promise<T | undefined> {
  const res = await httpCall(rpc, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), timeoutMs: 5000 })
  if (res.status < 200 || res.status >= 300) return undefined
  const body = JSON.parse(res.body) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}

export function tailLog(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)'
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
}
