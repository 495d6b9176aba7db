import type { Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { addCount } from '../core/counts.js'

export interface OpenConnectionLimits {
  /** Open p2p connections in all, handshakes included (`quotas.connections`). */
  total: number
  /** Connections from one remote address that have not completed their TLS handshake (`quotas.unidentifiedConnectionsPerAddress`). */
  unidentifiedPerAddress: number
}

/**
 * Counts the p2p endpoint's open connections from their first TCP byte, before any certificate says who they are.
 * Anyone who reaches the port can open connections that never start TLS, each living until the handshake timeout: so
 * one address may hold only a few such unidentified connections, and past that, or at the total, the oldest
 * unidentified connection (of the address, or of all) is closed for the new one rather than the new one (a member's)
 * dropped. Only connections whose handshake completed fill the total for good, and those are capped per certificate
 * and org (ConnectionCaps).
 */
export class OpenConnections {
  /** Every counted connection, with where it came from (read at once: a closed socket no longer knows). */
  private readonly counted = new Map<Socket, { key: string; address: string }>()
  /** Connections still in their handshake, oldest first, by `address:port` (the TLS socket wraps the counted one). */
  private readonly unidentified = new Map<string, Socket>()
  private readonly perAddress = new Map<string, number>()

  constructor(
    private readonly limits: OpenConnectionLimits,
    /** Told of each connection closed or dropped here, with a key for the refusal log (one line per key a minute). */
    private readonly refused: (line: string, key: string) => void,
  ) {}

  /** A new TCP connection: counted, an older unidentified one closed for it where a cap is reached, or else dropped. */
  accepted(socket: Socket): void {
    const address = socket.remoteAddress ?? 'unknown'
    // On loopback every member connects from the same address as a stranger would: the stranger's oldest connection
    // makes way, so that a new one (a member's, whose handshake takes milliseconds) is never the one turned away.
    if ((this.perAddress.get(address) ?? 0) >= this.limits.unidentifiedPerAddress) {
      const oldest = this.oldestUnidentified(address)
      this.refused(`p2p: closed a connection from ${address} still in its TLS handshake for a new one: ${this.limits.unidentifiedPerAddress} from it have not completed theirs (quotas.unidentifiedConnectionsPerAddress)`, `unidentified ${address}`)
      if (oldest) this.close(oldest)
    }
    if (this.counted.size >= this.limits.total) {
      const oldest = this.oldestUnidentified()
      if (!oldest) {
        this.refused(`p2p: dropped a connection from ${address}: ${this.limits.total} are open already, every one past its TLS handshake (quotas.connections)`, 'dropped')
        socket.destroy()
        return
      }
      this.refused(`p2p: closed a connection from ${this.counted.get(oldest)?.address} still in its TLS handshake for a new one: ${this.limits.total} are open (quotas.connections)`, 'evicted')
      this.close(oldest)
    }
    const key = `${address}:${socket.remotePort}`
    this.counted.set(socket, { key, address })
    this.unidentified.set(key, socket)
    addCount(this.perAddress, address, 1)
    socket.once('close', () => this.forget(socket))
  }

  /** A connection whose handshake completed: it no longer counts against its address, nor may it be closed for another. */
  identified(socket: TLSSocket): void {
    const raw = this.unidentified.get(`${socket.remoteAddress ?? 'unknown'}:${socket.remotePort}`)
    if (raw) this.leaveUnidentified(raw)
  }

  private oldestUnidentified(address?: string): Socket | undefined {
    for (const socket of this.unidentified.values()) if (address === undefined || this.counted.get(socket)?.address === address) return socket
    return undefined
  }

  private close(socket: Socket): void {
    this.forget(socket)
    socket.destroy()
  }

  private forget(socket: Socket): void {
    this.leaveUnidentified(socket)
    this.counted.delete(socket)
  }

  private leaveUnidentified(socket: Socket): void {
    const info = this.counted.get(socket)
    if (!info || this.unidentified.get(info.key) !== socket) return
    this.unidentified.delete(info.key)
    addCount(this.perAddress, info.address, -1)
  }
}
