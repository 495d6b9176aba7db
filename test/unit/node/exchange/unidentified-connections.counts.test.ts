import { expect } from 'chai'
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { OpenConnections } from '../../../../node/exchange/unidentified-connections.js'

/** The part of a socket OpenConnections reads: where it came from, closing it, and its close event. */
class FakeSocket extends EventEmitter {
  destroyed = false
  constructor(
    readonly remoteAddress: string | undefined,
    readonly remotePort: number,
  ) {
    super()
  }
  destroy(): void {
    this.destroyed = true
    this.emit('close')
  }
}

/**
 * What the endpoint's count of open connections decides at its edges, over stand-in sockets: a new connection when
 * every one open has completed its handshake, a socket that no longer knows its address, a handshake it never counted.
 */
describe('p2p connections: the count of open ones', () => {
  let lines: { line: string; key: string }[]
  let open: OpenConnections
  let port = 40_000

  beforeEach(() => {
    lines = []
    open = new OpenConnections({ total: 2, unidentifiedPerAddress: 2 }, (line, key) => lines.push({ line, key }))
  })
  const socket = (address: string | null = '127.0.0.2') => new FakeSocket(address ?? undefined, port++)
  const accept = (s: FakeSocket) => open.accepted(s as unknown as Socket)
  const identify = (s: FakeSocket) => open.identified(s as unknown as TLSSocket)

  it('drops a new connection when the total is open and every one has completed its handshake', () => {
    const [a, b, c] = [socket(), socket('127.0.0.3'), socket('127.0.0.4')]
    accept(a)
    accept(b)
    identify(a)
    identify(b)
    accept(c)
    expect([a.destroyed, b.destroyed, c.destroyed]).to.deep.equal([false, false, true])
    expect(lines).to.deep.equal([{ line: 'p2p: dropped a connection from 127.0.0.4: 2 are open already, every one past its TLS handshake (quotas.connections)', key: 'dropped' }])
  })

  it('makes room once a connection closes', () => {
    const [a, b, c] = [socket(), socket('127.0.0.3'), socket('127.0.0.4')]
    accept(a)
    accept(b)
    identify(a)
    identify(b)
    a.destroy()
    accept(c)
    expect(c.destroyed).to.equal(false)
    expect(lines).to.deep.equal([])
  })

  it('closes the oldest connection still in its handshake, of any address, for a new one at the total', () => {
    const [a, b, c] = [socket('127.0.0.2'), socket('127.0.0.3'), socket('127.0.0.4')]
    accept(a)
    accept(b)
    identify(a)
    accept(c)
    expect([a.destroyed, b.destroyed, c.destroyed]).to.deep.equal([false, true, false])
    expect(lines).to.deep.equal([{ line: 'p2p: closed a connection from 127.0.0.3 still in its TLS handshake for a new one: 2 are open (quotas.connections)', key: 'evicted' }])
  })

  it('counts a socket that no longer knows its address under "unknown"', () => {
    const [a, b, c] = [socket(null), socket(null), socket(null)]
    open = new OpenConnections({ total: 10, unidentifiedPerAddress: 2 }, (line, key) => lines.push({ line, key }))
    accept(a)
    accept(b)
    accept(c)
    expect([a.destroyed, b.destroyed, c.destroyed]).to.deep.equal([true, false, false])
    expect(lines.map((l) => l.key)).to.deep.equal(['unidentified unknown'])
    // Once through its handshake, such a socket no longer takes one of those places.
    identify(b)
    const d = socket(null)
    accept(d)
    expect([b.destroyed, c.destroyed, d.destroyed]).to.deep.equal([false, false, false])
  })

  it('ignores a handshake of a connection it never counted: those it counted stay in their handshake', () => {
    const [a, b, c, stranger] = [socket(), socket(), socket(), socket()]
    accept(a)
    accept(b)
    identify(stranger)
    // Both of the address's places are still taken by a and b: a third from it closes a, the oldest.
    accept(c)
    expect([a.destroyed, b.destroyed, c.destroyed]).to.deep.equal([true, false, false])
  })
})
