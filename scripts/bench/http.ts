/**
 * The benchmark's HTTP client: loopback only, every request bounded in time, over keep-alive connections with a lean
 * HTTP/1.1 client of its own (scripts/bench/http1-client.ts) rather than fetch or `node:http`: on a 2-core machine
 * the benchmark's CPU is taken from the nodes it measures.
 */
import { Http1Pool } from './http1-client.js'

const DEFAULT_TIMEOUT_MS = 30_000

/**
 * Connections per origin. Until `sizeClient` says otherwise, room for --concurrency's ceiling: a POST that queued
 * inside the client for a connection would have that wait counted as the node's.
 */
let maxSockets = 1024
const pools = new Map<string, Http1Pool>()

/** Connections per origin: at least the most requests the benchmark ever has in flight to one member. */
export function sizeClient(sockets: number): void {
  maxSockets = sockets
  for (const p of pools.values()) p.maxSockets = sockets
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

async function send(u: URL, method: string, body: string | undefined, deadline: number): Promise<HttpResult> {
  let pool = pools.get(u.host)
  if (pool === undefined) pools.set(u.host, (pool = new Http1Pool(u.hostname, Number(u.port || 80), maxSockets)))
  const res = await pool.request(method, `${u.pathname}${u.search}`, body, deadline)
  return { status: res.status, text: res.body.toString('utf8') }
}

export async function postJson(url: string, body: unknown, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  return send(loopbackUrl(url), 'POST', JSON.stringify(body), Date.now() + timeoutMs)
}

/** A GET answered with any status (a poller may expect 404 for a while). */
export async function get(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  return send(loopbackUrl(url), 'GET', undefined, Date.now() + timeoutMs)
}

/** A DELETE answered with any status. */
export async function del(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<HttpResult> {
  return send(loopbackUrl(url), 'DELETE', undefined, Date.now() + timeoutMs)
}

export async function getJson<T>(url: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  const res = await get(url, timeoutMs)
  if (res.status < 200 || res.status > 299) throw new Error(`GET ${url} answered ${res.status}: ${res.text.slice(0, 300)}`)
  return JSON.parse(res.text) as T
}

export { sleep } from '../../node/core/backoff.js'
