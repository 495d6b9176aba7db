import { ns } from './state'

/**
 * The console's one way to the node: its public REST API under `/api/v1`, on the origin that served the page.
 * Answers are typed by what the API documents (types.ts); an error is the API's own `{"error": "CODE: message"}`.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The API's error code (`SCHEMA_VALIDATION_FAILED`, ...), or `NETWORK` when no answer came. */
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** Query parameters; an array repeats the parameter (a FireFly filter's OR group). */
export type Params = Record<string, string | number | boolean | readonly (string | number)[] | undefined>

/** `/api/v1/namespaces/<ns><path>` in the namespace the console shows. */
export function nsPath(path: string): string {
  return nsPathOf(ns.value, path)
}

/** `/api/v1/namespaces/<namespace><path>` in a given namespace. */
export function nsPathOf(namespace: string, path: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}${path}`
}

export function withQuery(path: string, params: Params = {}): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    for (const one of Array.isArray(v) ? (v as readonly (string | number)[]) : [v]) if (one !== undefined && one !== '') q.append(k, String(one))
  }
  const s = q.toString()
  return s ? `${path}?${s}` : path
}

export function apiGet<T>(path: string, params?: Params): Promise<T> {
  return call<T>(withQuery(path, params), { method: 'GET' })
}

/**
 * A collection route's answer: checked to be a list at the boundary (its items are the API's documented shape), so a
 * wrong answer is an error shown in the view rather than a crash somewhere inside it.
 */
export async function apiGetList<T>(path: string, params?: Params): Promise<T[]> {
  const body = await apiGet<unknown>(path, params)
  if (!Array.isArray(body) || body.some((item) => typeof item !== 'object' || item === null)) {
    throw new ApiError(0, 'HTTP', `GET ${path} answered something other than a list of objects`)
  }
  return body as T[]
}

export function apiPost<T>(path: string, body: unknown): Promise<T> {
  return call<T>(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
}

/** A multipart upload (the browser writes the boundary). */
export function apiUpload<T>(path: string, form: FormData): Promise<T> {
  return call<T>(path, { method: 'POST', body: form })
}

async function call<T>(url: string, init: RequestInit): Promise<T> {
  let res: Response
  try {
    res = await fetch(url, { ...init, headers: { Accept: 'application/json', ...init.headers } })
  } catch (err) {
    throw new ApiError(0, 'NETWORK', `the node did not answer: ${err instanceof Error ? err.message : String(err)}`)
  }
  const text = await res.text()
  let body: unknown
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  if (!res.ok) {
    const error = typeof body === 'object' && body !== null && 'error' in body ? String((body as { error: unknown }).error) : `${res.status} ${res.statusText}`
    // `CODE: message`, as every API error is written (node/core/errors.ts).
    const m = /^([A-Z_]+): ([\s\S]*)$/.exec(error)
    throw new ApiError(res.status, m?.[1] ?? 'HTTP', m?.[2] ?? error)
  }
  return body as T
}

export function errorText(err: unknown): string {
  return err instanceof ApiError ? (err.code === 'HTTP' || err.code === 'NETWORK' ? err.message : `${err.code}: ${err.message}`) : String(err)
}
