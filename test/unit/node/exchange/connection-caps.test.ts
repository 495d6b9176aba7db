import { expect } from 'chai'
import { EventEmitter } from 'node:events'
import type { TLSSocket } from 'node:tls'
import { ConnectionCaps } from '../../../../node/exchange/connection-caps.js'

/** The part of a TLS socket ConnectionCaps reads: the peer's certificate, closing it, and its close event. */
class FakeTlsSocket extends EventEmitter {
  destroyed = false
  constructor(private readonly cert: { fingerprint256?: string; subject?: { O?: string } }) {
    super()
  }
  getPeerCertificate(): { fingerprint256?: string; subject?: { O?: string } } {
    return this.cert
  }
  destroy(): void {
    this.destroyed = true
    this.emit('close')
  }
}

/**
 * The endpoint's caps on open connections once a handshake says who they are, over stand-in sockets: per certificate,
 * per org (named by the registered node, else the certificate, else none), and unregistered certificates together.
 */
describe('p2p connections: caps per certificate, org and stranger', () => {
  const REGISTERED = new Set(['AA', 'BB', 'CC'])
  let orgs: Map<string, string>
  let caps: ConnectionCaps

  beforeEach(() => {
    orgs = new Map([['AA', 'org-a']])
    caps = new ConnectionCaps({ perCertificate: 2, perOrg: 3, unregistered: 1 }, { registered: (f) => REGISTERED.has(f), orgOf: (f) => orgs.get(f) })
  })
  const open = (fingerprint: string | undefined, O?: string): FakeTlsSocket => {
    const s = new FakeTlsSocket({ ...(fingerprint ? { fingerprint256: fingerprint } : {}), subject: O === undefined ? {} : { O } })
    caps.identified(s as unknown as TLSSocket)
    return s
  }
  const refusal = (s: FakeTlsSocket) => caps.refusalOf(s as unknown as TLSSocket)

  it('counts a registered certificate under itself and under the org its node registered, over the subject\'s', () => {
    const s = open('AA', 'subject-org')
    expect(refusal(s)).to.equal(undefined)
    expect([caps.count('cert AA'), caps.count('org org-a'), caps.count('org subject-org')]).to.deep.equal([1, 1, 0])
    s.destroy()
    expect([caps.count('cert AA'), caps.count('org org-a')]).to.deep.equal([0, 0])
  })

  it('falls back to the certificate\'s org, and to none, for a node whose org is not known', () => {
    open('BB', 'orgB')
    open('CC')
    expect([caps.count('org orgB'), caps.count('org (no organization)')]).to.deep.equal([1, 1])
  })

  it('marks a connection past its certificate\'s or its org\'s cap with the 429\'s text, and counts it nowhere', () => {
    open('AA')
    open('AA')
    const third = open('AA')
    expect(refusal(third)).to.equal('TOO_MANY_REQUESTS: certificate sha256 AA already has 2 connections open here (quotas.connectionsPerCertificate)')
    expect(caps.count('cert AA')).to.equal(2)
    orgs.set('BB', 'org-a')
    open('BB')
    const overOrg = open('BB')
    expect(refusal(overOrg)).to.equal('TOO_MANY_REQUESTS: org org-a already has 3 connections open here over all its nodes (quotas.connectionsPerOrg)')
    third.destroy()
    overOrg.destroy()
    expect(caps.count('cert AA'), 'a capped connection closing frees nothing').to.equal(2)
  })

  it('counts unregistered certificates, and clients without one, together under their own cap', () => {
    const stranger = open('ZZ', 'orgZ')
    const anonymous = open(undefined)
    expect(refusal(stranger)).to.equal(undefined)
    expect(refusal(anonymous)).to.equal('TOO_MANY_REQUESTS: 1 connections from certificates no node registered are open here already (quotas.unregisteredConnections)')
    stranger.destroy()
    anonymous.destroy()
    expect(refusal(open(undefined))).to.equal(undefined)
  })
})
