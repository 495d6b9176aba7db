/** The benchmark's HTTP client: loopback only, every request bounded in time. */

const DEFAULT_TIMEOUT_MS = 30_000

function assertLoopback(url: string): void {
  const host = new URL(url).hostname
  if (host !== '127.0.0.1') throw new Error(`the benchmark only talks to 127.0.0.1, not ${host} (${url})`)
}

export interface HttpResult {
  status: number
  text: string
}

export async function postJson(url: string, body: unknown, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  assertLoopback(url)
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })
  return { status: res.status, text: await res.text() }
}

export async function getJson<T>(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  assertLoopback(url)
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  const text = await res.text()
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text) as T
}

export { sleep } from '../../node/core/backoff.js'
