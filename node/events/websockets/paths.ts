import { ParleyError } from '../../core/errors.js'
import { NAME_RE } from '../../core/names.js'

const NAMESPACED = /^\/api\/v1\/namespaces\/([^/]+)\/ws\/?$/

/**
 * Where applications open the event socket: `/ws` (the namespace comes with each start, as FireFly's SDK does) or
 * `/api/v1/namespaces/{ns}/ws` (scoped to that namespace). Undefined for any other path; `namespace` is undefined
 * on `/ws` and the decoded name (possibly invalid, for the caller to refuse) on the scoped form.
 */
export function eventSocketPath(path: string): { namespace: string | undefined } | undefined {
  if (path === '/ws' || path === '/ws/') return { namespace: undefined }
  const m = NAMESPACED.exec(path)
  if (!m) return undefined
  let ns: string
  try {
    ns = decodeURIComponent(m[1]!)
  } catch {
    ns = m[1]!
  }
  return { namespace: ns }
}

export function validNamespace(ns: string): boolean {
  return NAME_RE.test(ns)
}

/** The refusal of a namespace that fails validNamespace, in a socket's path or in a start frame alike. */
export function invalidNamespace(ns: string): ParleyError {
  return new ParleyError('INVALID_FIELD', `namespace must be 1-64 letters, digits, '.', '_' or '-' and start and end alphanumeric: ${JSON.stringify(ns).slice(0, 80)}`)
}
