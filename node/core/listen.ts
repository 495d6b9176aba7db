import type { Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { ParleyError } from './errors.js'

/** Listens and resolves once bound; a busy port rejects with EADDRINUSE (its `port` named) instead of crashing later. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((res, rej) => {
    server.once('error', rej)
    server.listen(port, host, () => {
      server.off('error', rej)
      res()
    })
  })
}

/** Stops accepting, drops open connections (keep-alive sockets would hold close() open), resolves when closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((res) => {
    server.close(() => res())
    server.closeAllConnections()
  })
}

/**
 * An answer written straight to a socket no request object owns, then the connection closed; destroyed once
 * written, since nothing else times such a socket out.
 */
export function writeRaw(socket: Duplex, status: number, reason: string, err: ParleyError, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(err.toJSON())
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.once('finish', () => socket.destroy())
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`)
}
