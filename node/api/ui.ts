import { createReadStream, lstatSync, realpathSync, type Stats } from 'node:fs'
import { join, sep } from 'node:path'
import type { Context, Next } from 'koa'
import { ParleyError } from '../core/errors.js'

/** Where the console lives on the API port. */
export const UI_PREFIX = '/ui'
/**
 * The interactive page of the API description (Swagger UI, from the swagger-ui-dist package), written into the
 * console's build beside index.html by network/build-console.ts; its script and style are console assets.
 */
export const API_PAGE = '/api'
export const API_PAGE_FILE = 'api.html'

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

/** What the console's pages may do: load only its own files, talk only to this node (REST and `/ws`), never be framed. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
}

const ALLOW = 'GET, HEAD, OPTIONS'

/** Whether a request path is a page of the build's (`/ui` or under `/ui/`, `/api` or `/api/`). */
export function isConsolePath(path: string): boolean {
  return path === UI_PREFIX || path.startsWith(`${UI_PREFIX}/`) || path === API_PAGE || path === `${API_PAGE}/`
}

/**
 * Serves the web console (the built `index.html` and `assets/`) under `/ui`, and the API page at `/api`, GET and
 * HEAD only, from `uiDir`. Without
 * a built console there it answers 503 saying how to build one (the directory it looked in goes to the log, once, not
 * to the client); an unknown or malformed path is the API's JSON 404. Only regular files are served: a symbolic
 * link in the build directory is not followed. Files are streamed from disk (the build directory never changes once
 * written, so nothing needs invalidating).
 */
export function consoleMiddleware(uiDir: string | undefined, log: (line: string) => void = () => {}) {
  let told = false
  const unbuilt = (): ParleyError => {
    if (!told) {
      told = true
      log(uiDir ? `web console: no build in ${uiDir}; /ui and /api answer 503 until it is built` : 'web console: no uiDir configured; /ui and /api answer 503')
    }
    return new ParleyError('UNAVAILABLE', 'the web console and API page are not built here: run `npm run build` (network:up builds it too) and start the node from .build/, or give its config "uiDir"')
  }
  return async (ctx: Context, next: Next): Promise<void> => {
    const path = ctx.path
    if (!isConsolePath(path)) return next()
    if (ctx.method === 'OPTIONS') {
      // As the API answers OPTIONS (node/api/router.ts).
      ctx.set('Allow', ALLOW)
      ctx.status = 204
      return
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', ALLOW)
      throw new ParleyError('METHOD_NOT_ALLOWED', `${ctx.method} ${path}: the web console is read-only (GET, HEAD)`)
    }
    if (uiDir === undefined) throw unbuilt()
    if (!path.startsWith(UI_PREFIX)) {
      const page = join(uiDir, API_PAGE_FILE)
      const stat = regularFile(page)
      if (!stat) throw unbuilt()
      return serve(ctx, page, stat, REVALIDATE)
    }
    const indexFile = join(uiDir, 'index.html')
    const rest = path === UI_PREFIX ? undefined : path.slice(UI_PREFIX.length + 1)
    if (rest === undefined || rest === '' || rest === 'index.html') {
      const index = regularFile(indexFile)
      if (!index) throw unbuilt()
      if (rest === undefined) {
        // Relative asset URLs in index.html resolve against `/ui/`, so the bare path moves there (keeping the hash,
        // which the browser carries over a redirect itself, and the query).
        ctx.status = 301
        ctx.set('Location', `${UI_PREFIX}/${ctx.querystring ? `?${ctx.querystring}` : ''}`)
        ctx.body = ''
        return
      }
      return serve(ctx, indexFile, index, REVALIDATE)
    }
    const asset = rest.startsWith('assets/') ? rest.slice('assets/'.length) : undefined
    const file = asset !== undefined && ASSET_NAME.test(asset) ? join(uiDir, 'assets', asset) : undefined
    const stat = file !== undefined && insideDir(join(uiDir, 'assets'), uiDir) ? regularFile(file) : undefined
    if (file !== undefined && stat) return serve(ctx, file, stat, IMMUTABLE)
    // Only a miss asks whether there is a console at all (a 503 says how to build one, a 404 that this is no file).
    if (!regularFile(indexFile)) throw unbuilt()
    throw new ParleyError('NOT_FOUND', `no console file at ${shortPath(path)}`)
  }
}

function serve(ctx: Context, file: string, stat: Stats, cacheControl: string): void {
  const dot = file.lastIndexOf('.')
  ctx.status = 200
  ctx.type = TYPES[dot >= 0 ? file.slice(dot) : ''] ?? 'application/octet-stream'
  ctx.set('Cache-Control', cacheControl)
  ctx.set(SECURITY_HEADERS)
  // Koa sends no body for HEAD and destroys the stream when the response finishes.
  ctx.body = createReadStream(file)
  ctx.length = stat.size
}

/** The file's own stats if it is a regular file (a symbolic link is not followed: it is no file here). */
function regularFile(file: string): Stats | undefined {
  try {
    const s = lstatSync(file)
    return s.isFile() ? s : undefined
  } catch {
    return undefined
  }
}

/** Whether `dir` is, once links are resolved, a directory inside `root` (so `assets` linked elsewhere serves nothing). */
function insideDir(dir: string, root: string): boolean {
  try {
    const real = realpathSync(dir)
    const realRoot = realpathSync(root)
    return real.startsWith(`${realRoot}${sep}`)
  } catch {
    return false
  }
}

/** A path as an error may quote it: bounded, and without control characters. */
function shortPath(path: string): string {
  const clean = path.replace(/[\x00-\x1f\x7f]/g, '?')
  return clean.length > 200 ? `${clean.slice(0, 200)}...` : clean
}
