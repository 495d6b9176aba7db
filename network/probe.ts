import { existsSync, readFileSync } from 'node:fs'
import { httpCall } from '../node/core/http-call.js'

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
