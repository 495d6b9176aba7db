import { existsSync, readFileSync } from 'node:fs'

/** One JSON-RPC call; undefined when the endpoint is not answering yet. */
export async function rpcCall<T>(rpc: string, method: string, params: unknown[]): Promise<T | undefined> {
  const res = await fetch(rpc, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5000),
  })
  if (!res.ok) return undefined
  const body = (await res.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}

export function tailLog(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)'
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
}
