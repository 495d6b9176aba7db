import http from 'node:http'

export interface LocalReply {
  status: number
  text: string
  /** The body parsed, or undefined when it is empty or not JSON. */
  json: unknown
  allow: string | undefined
}

/**
 * One request to a server on 127.0.0.1 (API unit tests): a JSON body when given (a string is sent as it is), headers
 * added to (or replacing) its own, the answer whole. Node's client rather than fetch, so that any method and any path go out exactly as written. Each on
 * a connection of its own: Node's global agent keeps sockets alive, and a request that reused one just as the server
 * closed it for idleness (its keepAliveTimeout, passed on a loaded machine between two tests) failed with ECONNRESET.
 */
export function localCall(port: number, method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<LocalReply> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
    const headers = { ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }), ...extraHeaders }
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let json: unknown
        try {
          json = text === '' ? undefined : JSON.parse(text)
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, text, json, allow: res.headers.allow })
      })
    })
    req.on('error', reject)
    req.end(payload)
  })
}
