import type Koa from 'koa'

/**
 * Browsers can reach a loopback port too. Like Kubo, refuse RPC calls a web page could forge: a request whose
 * Origin is another site, or whose Host is not this machine's name for itself (DNS rebinding).
 */
export function localOnly(host: string): Koa.Middleware {
  const hostnames = new Set(['127.0.0.1', 'localhost', '[::1]', host.includes(':') ? `[${host}]` : host])
  // Bound to every interface, the names callers use are unknowable: only the Origin check remains.
  const anyHost = host === '0.0.0.0' || host === '::'
  return async (ctx, next) => {
    const hostHeader = ctx.get('Host')
    const origin = ctx.get('Origin')
    const hostOk = anyHost || hostHeader === '' || hostnames.has(hostHeader.replace(/:\d+$/, ''))
    let originOk = origin === ''
    if (!originOk) {
      try {
        originOk = new URL(origin).host === hostHeader
      } catch {
        originOk = false
      }
    }
    if (!hostOk || !originOk) {
      ctx.status = 403
      ctx.body = { Message: '403 - Forbidden', Code: 0, Type: 'error' }
      return
    }
    await next()
  }
}
