import type { Server } from 'node:http'

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
