/**
 * Measures the two places where the design names a library and the node uses something else, so that
 * docs/architecture.md ("Dependencies") can say which is used and why, with figures:
 *
 * 1. Routing: the member's whole route table (node/api/routes, the admin routes included) matched by the node's own
 *    ApiRouter and by @koa/router with the same patterns, over a mix of requests (every served route and method once,
 *    and the routes a sending member takes most, broadcast and private sends, for half of them). Each request is a
 *    fresh Koa context dispatched straight to the middleware (no sockets), and a no-op middleware gives the cost of
 *    the context alone; the handlers do nothing but what the node's own wrapper does for every route (namespace and
 *    query parsing).
 * 2. Multipart uploads: one upload (two form fields, then a file) over loopback HTTP into a file on disk, read by
 *    busboy as the node reads it (node/api/multipart.ts) and by koa-body (formidable, which writes to its uploadDir).
 *
 * `node --import tsx scripts/deps-bench.ts [--requests N] [--mib M] [--runs R]`: prints the median of R runs of each.
 */
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat, unlink } from 'node:fs/promises'
import http from 'node:http'
import { Socket, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import Router, { type RouterMiddleware } from '@koa/router'
import Koa, { type Middleware } from 'koa'
import { koaBody } from 'koa-body'
import { readMultipart } from '../node/api/multipart.js'
import { parseQuery } from '../node/api/query.js'
import { ApiRouter, parseNamespace, type Handler, type RouteOptions } from '../node/api/router.js'
import type { RouteDoc } from '../node/api/route-doc.js'
import { adminRoutes } from '../node/api/routes/admin.js'
import { API_ROUTES } from '../node/api/routes/index.js'
import type { NodeServices } from '../node/services.js'

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} takes a whole number of at least 1`)
  return v
}
const REQUESTS = option('requests', 100_000)
const MIB = option('mib', 64)
const RUNS = option('runs', 5)

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** The node's route table with handlers that do nothing: the wrapper ApiRouter puts around each still runs. */
class NoopRouter extends ApiRouter<NodeServices> {
  private static readonly noop: Handler<NodeServices> = (ctx) => {
    ctx.status = 204
  }
  override get<P extends string>(path: P, doc: RouteDoc<P>, _h: Handler<NodeServices>, opts?: RouteOptions): this {
    return super.get(path, doc, NoopRouter.noop, opts)
  }
  override post<P extends string>(path: P, doc: RouteDoc<P>, _h: Handler<NodeServices>, opts?: RouteOptions): this {
    return super.post(path, doc, NoopRouter.noop, opts)
  }
  override put<P extends string>(path: P, doc: RouteDoc<P>, _h: Handler<NodeServices>, opts?: RouteOptions): this {
    return super.put(path, doc, NoopRouter.noop, opts)
  }
  override delete<P extends string>(path: P, doc: RouteDoc<P>, _h: Handler<NodeServices>, opts?: RouteOptions): this {
    return super.delete(path, doc, NoopRouter.noop, opts)
  }
  override at<P extends string>(method: 'get' | 'post' | 'put' | 'delete', path: P, doc: RouteDoc<P>): this {
    return super.at(method, path, doc, (ctx) => {
      ctx.status = 204
    })
  }
}

async function benchRouting(): Promise<void> {
  const own = new NoopRouter({} as NodeServices)
  for (const register of API_ROUTES) register(own)
  adminRoutes(own, 'bench-routing-token-not-checked-by-noop-handlers')
  const table = own.list()

  const koaRouter = new Router()
  for (const { pattern, methods } of table) {
    const namespaced = pattern.includes(':ns')
    const run: RouterMiddleware = (ctx) => {
      // What ApiRouter's wrapper does before each handler.
      if (namespaced) parseNamespace(ctx.params.ns)
      parseQuery(ctx.querystring)
      ctx.status = 204
    }
    for (const m of methods) if (m !== 'HEAD') koaRouter.register(pattern, [m], run)
  }

  const concrete = (pattern: string): string => pattern.replace(/:ns\b/, 'default').replace(/:id\b/, '0b6c2f5e-4a51-4c1e-9d7e-3f0a2b8c9d10').replace(/:(\w+)/g, 'x1')
  const every = table.flatMap(({ pattern, methods }) => methods.filter((m) => m !== 'HEAD').map((method) => ({ method, url: `${concrete(pattern)}?limit=25` })))
  const hot = [
    { method: 'POST', url: '/api/v1/namespaces/default/messages/broadcast' },
    { method: 'POST', url: '/api/v1/namespaces/default/messages/private' },
  ]
  const mix = [...every, ...Array.from({ length: every.length }, (_, i) => hot[i % hot.length]!)]

  const app = new Koa()
  const contextOf = (r: { method: string; url: string }): Koa.Context => {
    const req = new http.IncomingMessage(new Socket())
    req.method = r.method
    req.url = r.url
    return app.createContext(req, new http.ServerResponse(req))
  }
  const next = async (): Promise<void> => {}
  const time = async (mw: Middleware): Promise<number> => {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < REQUESTS; i++) {
      const ctx = contextOf(mix[i % mix.length]!)
      await mw(ctx, next)
      if (ctx.status !== 204) throw new Error(`${ctx.method} ${ctx.url}: not routed (${ctx.status})`)
    }
    return Number(process.hrtime.bigint() - t0) / REQUESTS
  }
  const matchers: [string, Middleware][] = [
    ['context only (no-op middleware)', (ctx) => void (ctx.status = 204)],
    ['ApiRouter (node/api/router.ts)', own.routes()],
    ['@koa/router 15.7.0', koaRouter.routes() as unknown as Middleware],
  ]
  // Warm every path first, then alternate the runs so that drift on a shared machine falls on all alike.
  for (const [, mw] of matchers) await time(mw)
  const runs = matchers.map((): number[] => [])
  for (let r = 0; r < RUNS; r++) for (const [i, [, mw]] of matchers.entries()) runs[i]!.push(await time(mw))
  const [base, ours, theirs] = runs.map(median) as [number, number, number]
  console.log(`routing: ${table.length} patterns, ${mix.length} requests in the mix, ${REQUESTS} dispatched per run, median of ${RUNS} runs`)
  for (const [i, [name]] of matchers.entries()) console.log(`  ${name.padEnd(34)} ${runs.map(median)[i]!.toFixed(0).padStart(6)} ns/request`)
  console.log(`  routing alone: ApiRouter ${(ours - base).toFixed(0)} ns, @koa/router ${(theirs - base).toFixed(0)} ns (${((theirs - base) / (ours - base)).toFixed(1)}x)`)
}

async function benchMultipart(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'parley-deps-bench-'))
  try {
    const viaBusboy = new Koa()
    viaBusboy.use(async (ctx) => {
      const form = await readMultipart(ctx)
      const file = join(dir, `busboy-${Date.now()}`)
      await pipeline(form.file.chunks, createWriteStream(file))
      await form.finished()
      ctx.body = { bytes: (await stat(file)).size }
      await unlink(file)
    })
    const viaKoaBody = new Koa()
    viaKoaBody.use(koaBody({ multipart: true, formidable: { uploadDir: dir, maxFileSize: 2 ** 40, maxTotalFileSize: 2 ** 40 } }))
    viaKoaBody.use(async (ctx) => {
      const f = ctx.request.files?.file
      const file = Array.isArray(f) ? f[0] : f
      if (!file) throw new Error('koa-body found no file')
      ctx.body = { bytes: file.size }
      await unlink(file.filepath)
    })

    const chunk = Buffer.alloc(256 * 1024, 'p')
    const boundary = 'deps-bench-boundary'
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="autometa"\r\n\r\ntrue\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"note":"bench"}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="blob.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    )
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
    const fileBytes = MIB * 4 * chunk.length

    const upload = async (port: number): Promise<{ ms: number; cpuMs: number }> => {
      const cpu0 = process.cpuUsage()
      const t0 = process.hrtime.bigint()
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/upload', headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': head.length + fileBytes + tail.length } })
      const answered = once(req, 'response') as Promise<[http.IncomingMessage]>
      req.write(head)
      for (let sent = 0; sent < fileBytes; sent += chunk.length) if (!req.write(chunk)) await once(req, 'drain')
      req.end(tail)
      const [res] = await answered
      let text = ''
      for await (const c of res) text += String(c)
      if (res.statusCode !== 200 || (JSON.parse(text) as { bytes: number }).bytes !== fileBytes) throw new Error(`upload failed: ${res.statusCode} ${text}`)
      const used = process.cpuUsage(cpu0)
      return { ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: (used.user + used.system) / 1000 }
    }

    console.log(`multipart: one upload of two fields and a ${MIB} MiB file over loopback into a file, median of ${RUNS} runs (client and server in this process)`)
    for (const [name, app] of [
      ['busboy 1.6.0 (node/api/multipart.ts)', viaBusboy],
      ['koa-body 8.0.1 (formidable)', viaKoaBody],
    ] as const) {
      const server = http.createServer(app.callback())
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const port = (server.address() as AddressInfo).port
      await upload(port)
      const runs: { ms: number; cpuMs: number }[] = []
      for (let r = 0; r < RUNS; r++) runs.push(await upload(port))
      server.close()
      const ms = median(runs.map((r) => r.ms))
      const cpuMs = median(runs.map((r) => r.cpuMs))
      console.log(`  ${name.padEnd(38)} ${ms.toFixed(0).padStart(6)} ms (${(MIB / (ms / 1000)).toFixed(0)} MiB/s), CPU ${cpuMs.toFixed(0)} ms (${(cpuMs / MIB).toFixed(2)} ms per MiB)`)
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

await benchRouting()
await benchMultipart()
