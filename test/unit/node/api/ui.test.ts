import { expect } from 'chai'
import http from 'node:http'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import type { NodeServices } from '../../../../node/services.js'
import { freePort } from '../../../../network/process.js'
import { TempDirs } from '../../../support/db/helpers.js'

interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
}

/** One raw request: the path goes out byte for byte (no client-side normalising of `..` or `%2F`). */
function call(port: number, method: string, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, agent: false, method, path }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function serverWith(uiDir: string | undefined, log: (line: string) => void = () => {}): Promise<{ api: ApiServer; port: number }> {
  const services = { config: { limits: DEFAULT_REQUEST_LIMITS, ...(uiDir ? { uiDir } : {}) } } as unknown as NodeServices
  const port = await freePort()
  const api = await startApiServer({ host: '127.0.0.1', port, services, log })
  return { api, port }
}

const jsonError = (r: Reply): string => {
  expect(r.headers['content-type']).to.match(/^application\/json/)
  const body = JSON.parse(r.text) as { error: string }
  expect(body.error).to.be.a('string')
  return body.error
}

describe('web console serving (/ui) and the API page (/api)', () => {
  const temp = new TempDirs()
  let built: { api: ApiServer; port: number }
  let unbuilt: { api: ApiServer; port: number }
  let linkedAssets: { api: ApiServer; port: number }
  let missingDir: string
  const logged: string[] = []
  const JS = 'console.log("hi")\n'

  before(async () => {
    const dir = await temp.make('parley-ui-')
    mkdirSync(join(dir, 'assets'))
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>console</title>')
    writeFileSync(join(dir, 'api.html'), '<!doctype html><title>api</title>')
    writeFileSync(join(dir, 'assets', 'main-ABC123.js'), JS)
    writeFileSync(join(dir, 'assets', 'style-DEF456.css'), 'body{}')
    writeFileSync(join(dir, 'assets', 'main-ABC123.js.map'), '{}')
    writeFileSync(join(dir, 'assets', 'font-GHI789.ttf'), 'font')
    writeFileSync(join(dir, 'assets', 'LICENSE'), 'MIT')
    writeFileSync(join(dir, 'secret.txt'), 'not an asset')
    // Links inside the build directory, to a file outside the assets and to one outside the build.
    const outside = await temp.make('parley-outside-')
    writeFileSync(join(outside, 'private.js'), 'secret()')
    symlinkSync(join(dir, 'secret.txt'), join(dir, 'assets', 'linked-secret.js'))
    symlinkSync(join(outside, 'private.js'), join(dir, 'assets', 'linked-outside.js'))
    built = await serverWith(dir)
    missingDir = join(dir, 'missing')
    unbuilt = await serverWith(missingDir, (line) => logged.push(line))
    // A build whose assets directory is a link to somewhere else.
    const other = await temp.make('parley-ui-linked-')
    writeFileSync(join(other, 'index.html'), '<!doctype html>')
    symlinkSync(outside, join(other, 'assets'))
    linkedAssets = await serverWith(other)
  })
  after(async () => {
    await built.api.close()
    await unbuilt.api.close()
    await linkedAssets.api.close()
    await temp.cleanup()
  })

  it('serves index.html at /ui/ as HTML that browsers revalidate, and moves /ui there', async () => {
    const r = await call(built.port, 'GET', '/ui/')
    expect(r.status).to.equal(200)
    expect(r.headers['content-type']).to.equal('text/html; charset=utf-8')
    expect(r.headers['cache-control']).to.equal('no-cache')
    expect(r.text).to.include('<title>console</title>')
    const bare = await call(built.port, 'GET', '/ui?x=1')
    expect(bare.status).to.equal(301)
    expect(bare.headers.location).to.equal('/ui/?x=1')
  })

  it('serves the API page at /api and /api/ from the same build, as HTML that browsers revalidate', async () => {
    for (const path of ['/api', '/api/']) {
      const r = await call(built.port, 'GET', path)
      expect([r.status, r.headers['content-type'], r.headers['cache-control']], path).to.deep.equal([200, 'text/html; charset=utf-8', 'no-cache'])
      expect(r.text, path).to.include('<title>api</title>')
    }
    // Only those two paths are the page's: anything else under /api is the API's.
    expect((await call(built.port, 'GET', '/api/api.html')).status).to.equal(404)
    expect((await call(built.port, 'GET', '/api/index.html')).status).to.equal(404)
  })

  it('serves hashed assets with their content type, length and an immutable cache policy', async () => {
    const js = await call(built.port, 'GET', '/ui/assets/main-ABC123.js')
    expect(js.status).to.equal(200)
    expect(js.headers['content-type']).to.equal('text/javascript; charset=utf-8')
    expect(js.headers['cache-control']).to.equal('public, max-age=31536000, immutable')
    expect(js.headers['content-length']).to.equal(String(Buffer.byteLength(JS)))
    expect(js.text).to.equal(JS)
    expect((await call(built.port, 'GET', '/ui/assets/style-DEF456.css')).headers['content-type']).to.equal('text/css; charset=utf-8')
    expect((await call(built.port, 'GET', '/ui/assets/main-ABC123.js.map')).headers['content-type']).to.equal('application/json; charset=utf-8')
    // A type it does not know, or a name without one, is sent as bytes.
    expect((await call(built.port, 'GET', '/ui/assets/font-GHI789.ttf')).headers['content-type']).to.equal('application/octet-stream')
    const plain = await call(built.port, 'GET', '/ui/assets/LICENSE')
    expect(plain.headers['content-type']).to.equal('application/octet-stream')
    expect(plain.text).to.equal('MIT')
  })

  it('answers HEAD with the headers and no body', async () => {
    const r = await call(built.port, 'HEAD', '/ui/assets/main-ABC123.js')
    expect(r.status).to.equal(200)
    expect(r.headers['content-length']).to.equal(String(Buffer.byteLength(JS)))
    expect(r.text).to.equal('')
  })

  for (const path of [
    '/ui/assets/../secret.txt',
    '/ui/assets/..%2Fsecret.txt',
    '/ui/assets/%2e%2e%2fsecret.txt',
    '/ui/assets/main-ABC123.js%00',
    '/ui/assets/.hidden',
    '/ui/../package.json',
    '/ui/secret.txt',
    '/ui/assets/nope.js',
    '/ui/assets/',
  ]) {
    it(`refuses ${path} with the API's JSON 404`, async () => {
      const r = await call(built.port, 'GET', path)
      expect(r.status).to.equal(404)
      expect(jsonError(r)).to.match(/^NOT_FOUND: /)
    })
  }

  it('is read-only: other methods get 405 naming GET, HEAD and OPTIONS', async () => {
    const r = await call(built.port, 'POST', '/ui/')
    expect(r.status).to.equal(405)
    expect(r.headers.allow).to.equal('GET, HEAD, OPTIONS')
    expect(jsonError(r)).to.match(/^METHOD_NOT_ALLOWED: /)
  })

  it('answers OPTIONS as the API does: 204 with an Allow that lists OPTIONS', async () => {
    for (const path of ['/ui', '/ui/', '/ui/assets/main-ABC123.js']) {
      const r = await call(built.port, 'OPTIONS', path)
      expect(r.status, path).to.equal(204)
      expect(r.headers.allow, path).to.equal('GET, HEAD, OPTIONS')
      expect(r.text).to.equal('')
    }
  })

  it('sends a Content-Security-Policy and anti-framing headers with index.html, the API page and the assets', async () => {
    for (const path of ['/ui/', '/ui/assets/main-ABC123.js', '/api']) {
      const r = await call(built.port, 'GET', path)
      const csp = String(r.headers['content-security-policy'])
      expect(csp, path).to.include("default-src 'self'")
      expect(csp, path).to.include("connect-src 'self'")
      expect(csp, path).to.include("img-src 'self' data:")
      expect(csp, path).to.include("frame-ancestors 'none'")
      expect(csp, path).not.to.include('unsafe-inline')
      expect(r.headers['x-frame-options'], path).to.equal('DENY')
      expect(r.headers['referrer-policy'], path).to.equal('no-referrer')
      expect(r.headers['x-content-type-options'], path).to.equal('nosniff')
    }
  })

  it('does not follow symbolic links: a linked file, or an assets directory linked elsewhere, is a 404', async () => {
    for (const path of ['/ui/assets/linked-secret.js', '/ui/assets/linked-outside.js']) {
      const r = await call(built.port, 'GET', path)
      expect(r.status, path).to.equal(404)
      expect(r.text, path).not.to.include('not an asset')
      expect(r.text, path).not.to.include('secret()')
    }
    const r = await call(linkedAssets.port, 'GET', '/ui/assets/private.js')
    expect(r.status).to.equal(404)
    expect(r.text).not.to.include('secret()')
  })

  it('answers 503 with a JSON error saying how to build the console when there is none', async () => {
    for (const path of ['/ui', '/ui/', '/ui/assets/main-ABC123.js', '/api']) {
      const r = await call(unbuilt.port, 'GET', path)
      expect(r.status, path).to.equal(503)
      const error = jsonError(r)
      expect(error).to.match(/^UNAVAILABLE: the web console and API page are not built.*npm run build/)
      // No filesystem path goes to the client; the log has it, once.
      expect(error).not.to.include(missingDir)
      expect(error).not.to.match(/(^|[\s(])\/(tmp|home|work|usr|var)\//)
    }
    expect(logged.filter((l) => l.includes(missingDir))).to.have.length(1)
    const noneLogged: string[] = []
    const none = await serverWith(undefined, (line) => noneLogged.push(line))
    try {
      expect((await call(none.port, 'GET', '/ui/')).status).to.equal(503)
      expect(noneLogged.filter((l) => l.startsWith('web console:'))).to.deep.equal(['web console: no uiDir configured; /ui and /api answer 503'])
    } finally {
      await none.api.close()
    }
  })

  it('leaves every other path to the API', async () => {
    const r = await call(built.port, 'GET', '/uix')
    expect(r.status).to.equal(404)
    expect(jsonError(r)).to.include('no route for GET /uix')
  })
})
