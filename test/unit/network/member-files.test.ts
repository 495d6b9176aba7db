import { expect } from 'chai'
import { statSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { X509Certificate } from 'node:crypto'
import { memberConfig, writeMemberFiles } from '../../../network/member-files.js'

describe("network/member-files: a member's folder", () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-member-files-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const settings = { org: 'o1', node: 'n1', host: '127.0.0.5', apiPort: 1, p2pPort: 2, chain: { rpc: 'http://c:1', contract: '0x00', firstBlock: 0 }, ipfs: { api: 'http://i:1', gateway: 'http://i:2' } }

  it('the config names its files relative to itself; admin only when asked', () => {
    const cfg = memberConfig({ ...settings, admin: false })
    expect(cfg).to.deep.include({ signingKeyFile: 'signing.key', dataDir: 'data', api: { host: '127.0.0.5', port: 1 } })
    expect(cfg.p2p).to.deep.equal({ host: '127.0.0.5', port: 2, certFile: 'tls/cert.pem', keyFile: 'tls/key.pem' })
    expect(cfg).to.not.have.property('admin')
    expect(memberConfig({ ...settings, admin: true }).admin).to.equal(true)
  })

  it('writes the key and TLS key readable by the owner only, the certificate for the hosts given, then the config', async () => {
    const config = join(dir, 'm', 'config.json')
    const { address } = await writeMemberFiles(config, memberConfig({ ...settings, admin: true }), ['127.0.0.5', 'member.example'])
    expect(address).to.match(/^0x[0-9a-f]{40}$/)
    expect(statSync(join(dir, 'm', 'signing.key')).mode & 0o777).to.equal(0o600)
    expect(statSync(join(dir, 'm', 'tls', 'key.pem')).mode & 0o777).to.equal(0o600)
    expect(new X509Certificate(readFileSync(join(dir, 'm', 'tls', 'cert.pem'))).subjectAltName).to.equal('IP Address:127.0.0.5, DNS:member.example')
    expect(JSON.parse(readFileSync(config, 'utf8'))).to.deep.include({ org: 'o1', node: 'n1', admin: true })
  })

  it('a config naming a PostgreSQL URL (its password) is readable by the owner only', async () => {
    const config = join(dir, 'pg', 'config.json')
    await writeMemberFiles(config, memberConfig({ ...settings, admin: false, database: { type: 'postgres', url: 'postgres://u:secret@h:5432/d' } }), ['127.0.0.5'])
    expect(statSync(config).mode & 0o777).to.equal(0o600)
    expect(JSON.parse(readFileSync(config, 'utf8')).database).to.deep.equal({ type: 'postgres', url: 'postgres://u:secret@h:5432/d' })
  })
})
