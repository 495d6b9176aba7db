import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { closeServer } from '../../node/core/listen.js'

/**
 * A plain HTTP server on 127.0.0.1, on a port the system picks, that answers as the test says: an endpoint that a
 * client under test talks to (Kubo's RPC API, a gateway) playing its part, healthy or not. `handler` may be swapped
 * between requests; `stop` drops open connections and closes it.
 */
export class ScriptedServer {
  handler: http.RequestListener = (_req, res) => res.end()
  /** Requests received, by URL, in order. */
  readonly requests: string[] = []
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedServer> {
    let self: ScriptedServer | undefined
    const server = http.createServer((req, res) => {
      self!.requests.push(req.url ?? '')
      self!.handler(req, res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    self = new ScriptedServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    return self
  }

  stop(): Promise<void> {
    return closeServer(this.server)
  }
}

/** A request's body, whole. */
export async function bodyOf(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}
