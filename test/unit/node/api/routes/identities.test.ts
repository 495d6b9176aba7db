import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import { NetworkMap } from '../../../../../node/identity/network-map.js'
import { newId, type IdentityId, type MessageId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'

const at = (s: number) => `2024-01-01T00:00:${String(s).padStart(2, '0')}Z` as Timestamp
const KEY0 = '0x' + '0a'.repeat(20)

/** FireFly's Verifier.Seal, written out: sha256 over namespace, type and value. */
const seal = (ns: string, type: string, value: string) => createHash('sha256').update(ns).update(type).update(value).digest('hex')

/** Identities and verifiers through the real server, over a real (temporary) database. */
describe('identities and verifiers: API', () => {
  const org0 = newId<IdentityId>()
  const node0 = newId<IdentityId>()
  const org1 = newId<IdentityId>()

  const t = apiSuite('parley-identities-api-', async (r) => {
    await r.db.transaction((tx) => {
      r.identities.insert(tx, { id: org0, did: 'did:firefly:org/org0', type: 'org', namespace: 'svc_system', name: 'org0', messages: { claim: newId<MessageId>() }, created: at(1) })
      r.identities.insertVerifier(tx, { identity: org0, type: 'ethereum_address', value: KEY0, created: at(1) })
      r.identities.insert(tx, { id: node0, did: 'did:firefly:node/node0', type: 'node', parent: org0, namespace: 'svc_system', name: 'node0', messages: { claim: newId<MessageId>() }, created: at(2) })
      r.identities.insertVerifier(tx, { identity: node0, type: 'dx_peer_id', value: 'did:firefly:node/node0', created: at(2) })
      r.identities.insert(tx, { id: org1, did: 'did:firefly:org/org1', type: 'org', namespace: 'svc_system', name: 'org1', messages: { claim: newId<MessageId>() }, created: at(3) })
    })
    return { networkMap: new NetworkMap(r.identities) }
  })

  const call = async (method: string, path: string, status: number, body?: unknown) => {
    const res = await localCall(t.port, method, path, body)
    expect(res.status, `${method} ${path}: ${res.text}`).to.equal(status)
    return res
  }

  it('lists every identity, orgs and nodes, oldest first, with their verifiers when asked; filters and pages', async () => {
    const plain = (await call('GET', '/api/v1/namespaces/default/identities', 200)).json as { did: string; verifiers?: unknown }[]
    expect(plain.map((i) => i.did)).to.deep.equal(['did:firefly:org/org0', 'did:firefly:node/node0', 'did:firefly:org/org1'])
    expect(plain[0]).to.not.have.property('verifiers')
    const full = (await call('GET', '/api/v1/identities?fetchverifiers=true', 200)).json as { verifiers: { type: string; value: string }[] }[]
    expect(full.map((i) => i.verifiers)).to.deep.equal([[{ type: 'ethereum_address', value: KEY0 }], [{ type: 'dx_peer_id', value: 'did:firefly:node/node0' }], []])
    expect(((await call('GET', '/api/v1/identities?type=node', 200)).json as { id: string }[]).map((i) => i.id)).to.deep.equal([node0])
    expect(((await call('GET', '/api/v1/identities?limit=1&skip=2', 200)).json as { id: string }[]).map((i) => i.id)).to.deep.equal([org1])
    await call('GET', '/api/v1/identities?colour=red', 400)
  })

  it('finds one identity by UUID, by DID as written, or by DID escaped; the same in every namespace', async () => {
    for (const path of [`/api/v1/identities/${org0}`, `/api/v1/identities/${org0.toUpperCase()}`, '/api/v1/identities/did:firefly:org/org0', '/api/v1/namespaces/ns1/identities/did%3Afirefly%3Aorg%2Forg0']) {
      expect(((await call('GET', path, 200)).json as { id: string }).id, path).to.equal(org0)
    }
    const withVerifiers = (await call('GET', `/api/v1/identities/did:firefly:node/node0?fetchverifiers=true`, 200)).json as { parent: string; verifiers: unknown[] }
    expect(withVerifiers.parent).to.equal(org0)
    expect(withVerifiers.verifiers).to.deep.equal([{ type: 'dx_peer_id', value: 'did:firefly:node/node0' }])
    await call('GET', `/api/v1/identities/${newId<IdentityId>()}`, 404)
    await call('GET', '/api/v1/identities/did:firefly:org/nobody', 404)
    await call('GET', '/api/v1/identities/org0', 404)
    await call('GET', '/api/v1/identities/not-a-did/x', 404)
  })

  it("verifiers in FireFly's shape, hashed as FireFly seals them, by identity, by hash and filtered", async () => {
    const all = (await call('GET', '/api/v1/verifiers', 200)).json as { hash: string }[]
    const expected = { hash: seal('svc_system', 'ethereum_address', KEY0), identity: org0, namespace: 'svc_system', type: 'ethereum_address', value: KEY0, created: at(1) }
    expect(all[0]).to.deep.equal(expected)
    expect(Object.keys(all[0]!)).to.deep.equal(['hash', 'identity', 'namespace', 'type', 'value', 'created'])
    expect(all).to.have.length(2)
    expect((await call('GET', `/api/v1/verifiers/${expected.hash}`, 200)).json).to.deep.equal(expected)
    expect((await call('GET', `/api/v1/verifiers/0x${expected.hash.toUpperCase()}`, 200)).json).to.deep.equal(expected)
    await call('GET', `/api/v1/verifiers/${'ee'.repeat(32)}`, 404)
    await call('GET', '/api/v1/verifiers/nothex', 400)
    expect((await call('GET', `/api/v1/identities/${org0}/verifiers`, 200)).json).to.deep.equal([expected])
    expect((await call('GET', `/api/v1/identities/${org1}/verifiers`, 200)).json).to.deep.equal([])
    expect(((await call('GET', '/api/v1/verifiers?type=dx_peer_id', 200)).json as { identity: string }[]).map((v) => v.identity)).to.deep.equal([node0])
  })

  it("resolves a signing key as FireFly does for a lookup: the chain's type, the address lowercase with 0x", async () => {
    const upper = KEY0.slice(2).toUpperCase()
    expect((await call('POST', '/api/v1/verifiers/resolve', 200, { value: upper })).json).to.deep.equal({ type: 'ethereum_address', value: KEY0 })
    expect((await call('POST', '/api/v1/namespaces/ns1/verifiers/resolve', 200, { type: 'ethereum_address', value: `0x${upper}` })).json).to.deep.equal({ type: 'ethereum_address', value: KEY0 })
    // Not asked whether a member holds it, as in FireFly.
    expect((await call('POST', '/api/v1/verifiers/resolve', 200, { value: '0x' + 'ff'.repeat(20) })).json).to.deep.equal({ type: 'ethereum_address', value: '0x' + 'ff'.repeat(20) })
    for (const body of [{ type: 'fabric_msp_id', value: KEY0 }, { value: 'org0' }, {}, { value: 7 }, []]) {
      expect((await call('POST', '/api/v1/verifiers/resolve', 400, body)).json, JSON.stringify(body)).to.have.property('error')
    }
  })

  it("FireFly's deprecated network/identities: every identity with its verifiers", async () => {
    const list = (await call('GET', '/api/v1/network/identities', 200)).json as { verifiers: unknown[] }[]
    expect(list.map((i) => i.verifiers.length)).to.deep.equal([1, 1, 0])
    expect(((await call('GET', '/api/v1/network/identities/did:firefly:node/node0', 200)).json as { id: string }).id).to.equal(node0)
    expect(((await call('GET', `/api/v1/network/identities/${org1}`, 200)).json as { verifiers: unknown[] }).verifiers).to.deep.equal([])
  })
})
