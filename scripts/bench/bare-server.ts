/**
 * The bare baseline's server: what this machine can accept at all through the same stack a member's API is built
 * on (Koa, a router, sql.js), with none of a member's work (validation, batching, signing, journal). One POST
 * route reads the JSON body, hashes it, inserts one row and answers 202 with `{header: {id}, hash}`, the shape
 * of a broadcast's answer that the benchmark's sender reads. Its router is still @koa/router, as in every earlier
 * run (members route with their own matcher since, node/api/router.ts): with one route it costs about what one
 * segment match does, and the baseline stays comparable across runs.
 *
 * `node --import tsx scripts/bench/bare-server.ts`: listens on a free port of 127.0.0.1 and prints `{"port":N}`
 * on stdout once it accepts requests. Imports nothing from the project, so the baseline does not move when
 * the node's code does.
 */
import http from 'node:http'
import { createHash, randomUUID } from 'node:crypto'
import Koa from 'koa'
import Router from '@koa/router'
import initSqlJs from 'sql.js'

const MAX_BODY = 1024 * 1024

const SQL = await initSqlJs()
const db = new SQL.Database()
db.run('CREATE TABLE messages (id TEXT PRIMARY KEY, hash TEXT NOT NULL, body TEXT NOT NULL)')
// Prepared once, as the node's statement cache does: a fresh prepare per request would make the baseline slower
// than it has to be.
const insert = db.prepare('INSERT INTO messages (id, hash, body) VALUES (?, ?, ?)')

const app = new Koa()
app.silent = true
const router = new Router()
router.post('/messages', async (ctx) => {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY) {
      ctx.status = 413
      ctx.body = { error: `the body is over ${MAX_BODY} bytes` }
      return
    }
    chunks.push(chunk as Buffer)
  }
  const text = Buffer.concat(chunks).toString('utf8')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    value = undefined
  }
  if (typeof value !== 'object' || value === null) {
    ctx.status = 400
    ctx.body = { error: 'expected a JSON object' }
    return
  }
  const id = randomUUID()
  const hash = createHash('sha256').update(text).digest('hex')
  insert.run([id, hash, text])
  ctx.status = 202
  ctx.body = { header: { id }, hash }
})
app.use(router.routes())
app.use(router.allowedMethods())

const server = http.createServer(app.callback())
// As a member's API server sets it, so keep-alive sockets behave alike for the client.
server.keepAliveTimeout = 5_000
server.listen(0, '127.0.0.1', () => {
  const addr = server.address()
  process.stdout.write(`${JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 })}\n`)
})

// Detached like a member node, so a benchmark killed outright leaves it behind; the reaper stops it by PID, and
// this covers a reaper that went too.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) process.exit(0)
}, 1000).unref()
