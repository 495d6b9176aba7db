import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { ParleyError } from '../core/errors.js'
import { addCount } from '../core/counts.js'
import { writeRaw } from '../core/listen.js'

export interface ConnectionLimitOptions {
  /** Open connections in all (`limits.connections`). */
  total: number
  /** Open connections from one client address (`limits.connectionsPerAddress`). */
  perAddress: number
  /** Told of each refusal, with its text (the caller bounds how many it logs). */
  onRefused?: (line: string) => void
}

/**
 * Caps the API server's open connections, in all and per client address: each connection holds what its parser and
 * waiting requests hold, so the number of connections bounds the member's memory. A connection over a cap is answered
 * at once, before any request is read, with a short JSON error naming the knob, and closed. On loopback every client
 * is one address, hence a generous per-address cap: it stops one remote host, not the member's own tools.
 */
export function limitConnections(server: Server, opts: ConnectionLimitOptions): void {
  let open = 0
  const perAddress = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown'
    const fromAddress = perAddress.get(address) ?? 0
    const refusal =
      open >= opts.total
        ? ([503, 'Service Unavailable', new ParleyError('UNAVAILABLE', `${opts.total} API connections are open already (limits.connections)`)] as const)
        : fromAddress >= opts.perAddress
          ? ([429, 'Too Many Requests', new ParleyError('TOO_MANY_REQUESTS', `${opts.perAddress} API connections from ${address} are open already (limits.connectionsPerAddress)`)] as const)
          : undefined
    if (refusal) {
      socket.on('error', () => socket.destroy())
      opts.onRefused?.(`api: refused a connection from ${address}: ${refusal[2].message}`)
      writeRaw(socket, refusal[0], refusal[1], refusal[2])
      return
    }
    open++
    addCount(perAddress, address, 1)
    socket.once('close', () => {
      open--
      addCount(perAddress, address, -1)
    })
  })
}
