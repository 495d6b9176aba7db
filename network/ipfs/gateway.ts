import { Readable } from 'node:stream'
import Koa from 'koa'
import { IpfsError, errorMessage, isClientGone } from './errors.js'
import { formatIpfsPath, parseCid, type IpfsPath } from './ipfs-path.js'
import { isFileEntry } from './read-file.js'
import type { ContentStore } from './store.js'

export interface GatewayDeps {
  store: ContentStore
  log: (line: string) => void
}

function statusOf(err: unknown): number {
  if (!(err instanceof IpfsError)) return 500
  switch (err.kind) {
    case 'bad-request':
      return 400
    case 'not-found':
      return 404
    case 'not-a-file':
    case 'unsupported':
      return 501
  }
}

function pathOf(urlPath: string): IpfsPath {
  let parts: string[]
  try {
    parts = urlPath.slice('/ipfs/'.length).split('/').map(decodeURIComponent)
  } catch {
    throw new IpfsError('bad-request', `invalid path "${urlPath}": bad percent-encoding`)
  }
  const [first = '', ...rest] = parts
  if (first === '') throw new IpfsError('bad-request', `invalid path "${urlPath}": no CID`)
  return { cid: parseCid(first, urlPath), segments: rest.filter((s) => s !== '' && s !== '.') }
}

/** A single `bytes=a-b` / `bytes=a-` / `bytes=-n` range; anything else is ignored (the whole file is sent). */
function parseRange(header: string, size: bigint): [bigint, bigint] | 'unsatisfiable' | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return undefined
  if (m[1] === '') {
    const suffix = BigInt(m[2] ?? '0')
    if (suffix === 0n || size === 0n) return 'unsatisfiable'
    return [suffix > size ? 0n : size - suffix, size]
  }
  const start = BigInt(m[1] ?? '0')
  if (start >= size) return 'unsatisfiable'
  const last = m[2] === '' ? size - 1n : BigInt(m[2] ?? '0')
  if (last < start) return undefined
  return [start, last + 1n > size ? size : last + 1n]
}

async function serve(ctx: Koa.Context, store: ContentStore): Promise<void> {
  if (!ctx.path.startsWith('/ipfs/')) {
    ctx.status = 404
    ctx.body = 'not found: this gateway serves /ipfs/<cid>[/path] only\n'
    return
  }
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    ctx.status = 405
    ctx.set('Allow', 'GET, HEAD')
    ctx.body = 'method not allowed: this gateway is read-only\n'
    return
  }
  const p = pathOf(ctx.path)
  const entry = await store.resolve(p)
  if (entry.type === 'directory') {
    throw new IpfsError('not-a-file', `${formatIpfsPath(p)} is a directory; this gateway serves files only`)
  }
  if (!isFileEntry(entry)) throw new IpfsError('not-a-file', `${formatIpfsPath(p)} is not a file (${entry.type})`)
  const etag = `"${entry.cid.toString()}"`
  ctx.set('Etag', etag)
  ctx.set('X-Ipfs-Path', formatIpfsPath(p))
  // Content under /ipfs/ never changes: caches may keep it for good (Kubo sends the same).
  ctx.set('Cache-Control', 'public, max-age=29030400, immutable')
  ctx.set('Accept-Ranges', 'bytes')
  if (ctx.get('If-None-Match').split(',').some((t) => t.trim() === etag)) {
    ctx.status = 304
    return
  }
  const size = entry.size
  const range = parseRange(ctx.get('Range'), size)
  if (range === 'unsatisfiable') {
    ctx.status = 416
    ctx.set('Content-Range', `bytes */${size}`)
    return
  }
  const [start, end] = range ?? [0n, size]
  ctx.status = range ? 206 : 200
  if (range) ctx.set('Content-Range', `bytes ${start}-${end - 1n}/${size}`)
  ctx.type = 'application/octet-stream'
  if (ctx.method === 'GET') ctx.body = Readable.from(store.read(entry, start, end - start), { objectMode: false })
  // Set after the body: Koa drops Content-Length when a stream body is assigned.
  ctx.set('Content-Length', (end - start).toString())
}

/** The read-only gateway: `GET`/`HEAD /ipfs/<cid>[/path]`, streamed, with plain-text errors. */
export function createGatewayApp(deps: GatewayDeps): Koa {
  const app = new Koa()
  app.on('error', (err: unknown) => {
    if (!isClientGone(err)) deps.log(`ipfs gateway: ${errorMessage(err)}`)
  })
  app.use(async (ctx) => {
    try {
      await serve(ctx, deps.store)
    } catch (err) {
      const status = statusOf(err)
      if (status >= 500 && !(err instanceof IpfsError)) deps.log(`ipfs gateway: ${ctx.path}: ${errorMessage(err)}`)
      ctx.status = status
      ctx.type = 'text/plain'
      ctx.body = `${errorMessage(err)}\n`
    }
  })
  return app
}
