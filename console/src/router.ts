/**
 * The hash router: `#/<view>/<id>?ns=<namespace>&...`. The server only serves index.html and assets, so every
 * route lives after the `#`, and the namespace rides in the hash's query so a link names what it shows.
 */
export interface Route {
  /** Path segments after `#/`: `[]` is the overview, `['messages', '<id>']` a message's page. */
  segments: string[]
  query: URLSearchParams
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '')
  const q = raw.indexOf('?')
  const path = q >= 0 ? raw.slice(0, q) : raw
  const query = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '')
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s)
      } catch {
        return s
      }
    })
  return { segments, query }
}

/** A link to `path` (e.g. `/messages`) keeping the namespace when it is not the default. */
export function href(path: string, ns: string): string {
  return `#${path}${ns === DEFAULT_NAMESPACE ? '' : `?ns=${encodeURIComponent(ns)}`}`
}

export const DEFAULT_NAMESPACE = 'default'
