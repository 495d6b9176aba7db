import type { Outcome } from './http-client.js'
import type { FuzzRequest } from './request.js'

/** How the fuzzer counts an answer. */
export type OutcomeClass = '2xx' | '4xx' | '5xx' | 'hang' | 'dropped' | 'other'

export function classify(o: Outcome): OutcomeClass {
  if (o.kind !== 'answered') return o.kind
  if (o.status >= 200 && o.status < 300) return '2xx'
  if (o.status >= 400 && o.status < 500) return '4xx'
  if (o.status >= 500 && o.status < 600) return '5xx'
  return 'other'
}

/** Text that would betray a stack trace or a file path of the node. */
const LEAK = /\n\s+at |\/work\/|node_modules|\.ts:\d+/

/**
 * What is wrong with an answer, or undefined when it keeps the API's rule for bad input (docs/api.md,
 * Errors): a 2xx, or a 4xx whose body
 * is JSON `{"error": "..."}` naming the problem (a 405 also says what is allowed). Never a 5xx, a hang, a dropped
 * connection, or a trace. A request that hangs up half way cannot be answered; it only has to leave the node alive.
 */
export function problemWith(req: FuzzRequest, o: Outcome): string | undefined {
  if (o.kind === 'hang') return `no answer within ${o.ms} ms`
  if (o.kind === 'dropped') return req.hangUp ? undefined : `the connection ended without an answer (${o.reason})`
  const cls = classify(o)
  if (cls === '2xx') return undefined
  const text = o.body.toString('utf8')
  const shown = text.length > 300 ? `${text.slice(0, 300)}…` : text
  if (cls !== '4xx') return `status ${o.status}: ${shown}`
  if (o.status === 405 && !o.headers.has('allow')) return '405 without an Allow header'
  if (!/^application\/json\b/i.test(o.headers.get('content-type') ?? '')) return `${o.status} with content-type ${JSON.stringify(o.headers.get('content-type') ?? '')}, not JSON: ${shown}`
  // A HEAD answer carries the headers of the body it would have had, not the body.
  if (req.method === 'HEAD') return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return `${o.status} whose body is not JSON: ${shown}`
  }
  const error = (parsed as { error?: unknown } | null)?.error
  if (typeof error !== 'string' || error === '') return `${o.status} without an "error" string: ${shown}`
  if (LEAK.test(error)) return `${o.status} whose error leaks a trace or a path: ${shown}`
  return undefined
}
