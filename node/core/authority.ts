/**
 * The host part of a request's target as a `Host` header (and the API's allowedHosts) write it: `name[:port]`, the
 * name lower-cased, an IPv6 address in brackets. Undefined when it is not one (spaces, a user part, a bad port).
 */
export function parseAuthority(value: string): { name: string; port?: number } | undefined {
  const text = value.trim().toLowerCase()
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(\d{1,5}))?$/.exec(text)
  if (!m) return undefined
  const port = m[2] === undefined ? undefined : Number(m[2])
  if (port !== undefined && (port < 1 || port > 65535)) return undefined
  return port === undefined ? { name: m[1]! } : { name: m[1]!, port }
}
