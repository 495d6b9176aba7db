import { createReadStream, statSync, type Stats } from 'node:fs'
import { join } from 'node:path'
import type { Context, Next } from 'koa'
import { ParleyError } from '../core/errors.js'

/** Where the console lives on the API port. */
export const UI_PREFIX = '/ui'

/**
 * Content types by extension, for what the console's build writes (network/build-console.ts). Anything else is
 * served as bytes: the browser must never sniff a type the build did not mean.
 */
const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
}

/** Asset names are content-hashed, so an asset never changes: a browser may keep it for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable'
/** index.html names the current assets, so it is checked again on every load. */
const REVALIDATE = 'no-cache'

/**
 * One path segment a build can have written: letters, digits, `.`, `_`, `-`, not starting with a dot. This is the
 * whole traversal defence: `..`, `/`, `\`, `%2F`, `%2e%2e` and NUL cannot match (Koa's `ctx.path` is not decoded).
 */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/

/**
 * Serves the web console (the built `index.html` and `assets/`) under `/ui`, GET and HEAD only, from `uiDir`. Without
 * a built console there it answers 503 saying how to build one; an unknown or malformed path is the API's JSON 404.
 * Files are streamed from disk (the build directory never changes once written, so nothing needs invalidating).
 */
export function consoleMiddleware(uiDir: string | undefined) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const path = ctx.path
    if (path !== UI_PREFIX && !path.startsWith(`${UI_PREFIX}/`)) return next()
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD')
      throw new ParleyError('METHOD_NOT_ALLOWED', `${ctx.method} ${path}: the web console is read-only (GET, HEAD)`)
    }
    const index = uiDir === undefined ? undefined : statFile(join(uiDir, 'index.html'))
    if (uiDir === undefined || !index) {
      throw new ParleyError(
        'UNAVAILABLE',
        `the web console is not built${uiDir ? ` (no index.html in ${uiDir})` : ''}: run \`npm run build\` (network:up builds it too) and start the node from .build/, or give its config "uiDir"`,
      )
    }
    if (path === UI_PREFIX) {
      // Relative asset URLs in index.html resolve against `/ui/`, so the bare path moves there (keeping the hash,
      // which the browser carries over a redirect itself, and the query).
      ctx.status = 301
      ctx.set('Location', `${UI_PREFIX}/${ctx.querystring ? `?${ctx.querystring}` : ''}`)
      ctx.body = ''
      return
    }
    const rest = path.slice(UI_PREFIX.length + 1)
    if (rest === '' || rest === 'index.html') return serve(ctx, join(uiDir, 'index.html'), index, REVALIDATE)
    const asset = rest.startsWith('assets/') ? rest.slice('assets/'.length) : undefined
    const stat = asset !== undefined && ASSET_NAME.test(asset) ? statFile(join(uiDir, 'assets', asset)) : undefined
    if (asset === undefined || !stat) throw new ParleyError('NOT_FOUND', `no console file at ${shortPath(path)}`)
    serve(ctx, join(uiDir, 'assets', asset), stat, IMMUTABLE)
  }
}

function serve(ctx: Context, file: string, stat: Stats, cacheControl: string): void {
  const dot = file.lastIndexOf('.')
  ctx.status = 200
  ctx.type = TYPES[dot >= 0 ? file.slice(dot) : ''] ?? 'application/octet-stream'
  ctx.set('Cache-Control', cacheControl)
  ctx.set('X-Content-Type-Options', 'nosniff')
  // Koa sends no body for HEAD and destroys the stream when the response finishes.
  ctx.body = createReadStream(file)
  ctx.length = stat.size
}

function statFile(file: string): Stats | undefined {
  try {
    const s = statSync(file)
    return s.isFile() ? s : undefined
  } catch {
    return undefined
  }
}

/** A path as an error may quote it: bounded, and without control characters. */
function shortPath(path: string): string {
  const clean = path.replace(/[\x00-\x1f\x7f]/g, '?')
  return clean.length > 200 ? `${clean.slice(0, 200)}...` : clean
}
