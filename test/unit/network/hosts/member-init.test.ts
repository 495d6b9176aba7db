import { expect } from 'chai'
import { X509Certificate } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import { initMember, parseInitArgs, type MemberInitOptions } from '../../../../network/hosts/member-init.js'
import { loadNodeConfig } from '../../../../node/config.js'

describe('npm run node -- init: a member of its own host', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-member-init-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const CONTRACT = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
  const required = ['--config', join(dir, 'm', 'member.json'), '--org', 'acme', '--host', '127.0.0.3', '--chain', 'http://127.0.0.1:8545', '--contract', CONTRACT, '--ipfs', 'http://127.0.0.1:5001', '--ipfs-gateway', 'http://127.0.0.1:8080']

  /** The required arguments but one flag and its value. */
  const without = (...flags: string[]): string[] => required.filter((_, i) => !flags.includes(required[i]!) && !flags.includes(required[i - 1]!))

  it('reads the arguments, with FireFly\'s ports and the node named after the org by default', () => {
    expect(parseInitArgs(required)).to.deep.equal({
      config: join(dir, 'm', 'member.json'),
      org: 'acme',
      host: '127.0.0.3',
      chain: { rpc: 'http://127.0.0.1:8545', contract: CONTRACT.toLowerCase(), firstBlock: 0 },
      ipfs: { api: 'http://127.0.0.1:5001', gateway: 'http://127.0.0.1:8080' },
    })
    const all = parseInitArgs([...required, '--node', 'n1', '--first-block', '12', '--api-port', '6000', '--p2p-port', '6001', '--admin']) as MemberInitOptions
    expect([all.node, all.chain.firstBlock, all.apiPort, all.p2pPort, all.admin]).to.deep.equal(['n1', 12, 6000, 6001, true])
  })

  it('says which argument is missing or wrong', () => {
    for (const flag of ['--config', '--org', '--host', '--chain', '--contract', '--ipfs', '--ipfs-gateway']) expect(parseInitArgs(without(flag))).to.equal(`${flag} is required`)
    expect(parseInitArgs([...without('--contract'), '--contract', '0x12'])).to.match(/--contract must be a contract address/)
    expect(parseInitArgs([...required, '--api-port', '70000'])).to.match(/--api-port must be a whole number from 1 to 65535/)
    expect(parseInitArgs([...required, '--first-block=-1'])).to.match(/--first-block must be a whole number from 0/)
    expect(parseInitArgs([...without('--host'), '--host', '0.0.0.0'])).to.match(/--host 0.0.0.0 listens on every address: give --public-host/)
    expect(parseInitArgs([...required, '--bogus'])).to.match(/Unknown option '--bogus'/)
  })

  it('writes a config the node starts from, its key (0600) and a certificate naming its host; prints the address to fund', async () => {
    const opts = parseInitArgs([...required, '--api-port', '6100', '--p2p-port', '6101']) as MemberInitOptions
    const m = await initMember(opts)
    expect(m).to.deep.include({ config: join(dir, 'm', 'member.json'), api: 'http://127.0.0.3:6100', p2p: 'https://127.0.0.3:6101' })
    const cfg = loadNodeConfig(m.config)
    expect([cfg.org, cfg.node, cfg.api.host, cfg.api.port, cfg.p2p.host, cfg.p2p.port, cfg.admin]).to.deep.equal(['acme', 'acme-node', '127.0.0.3', 6100, '127.0.0.3', 6101, false])
    expect(cfg.chain).to.deep.equal({ rpc: 'http://127.0.0.1:8545', contract: CONTRACT.toLowerCase(), firstBlock: 0 })
    expect(cfg.dataDir).to.equal(join(dir, 'm', 'data'))
    expect(new Wallet(cfg.signingKey).address.toLowerCase()).to.equal(m.address)
    const cert = new X509Certificate(readFileSync(cfg.p2p.cert, 'utf8'))
    expect(cert.subjectAltName).to.equal('IP Address:127.0.0.3')
    expect(cert.subject).to.contain('O=acme')
  })

  it('a member listening on every address registers the public name it is reached at, which its certificate names', async () => {
    const args = [...without('--config', '--host'), '--config', join(dir, 'nat', 'member.json'), '--host', '0.0.0.0', '--public-host', 'member1.example.com', '--p2p-port', '443']
    const m = await initMember(parseInitArgs(args) as MemberInitOptions)
    expect(m.p2p).to.equal('https://member1.example.com:443')
    const cfg = loadNodeConfig(m.config)
    expect(cfg.p2p).to.deep.include({ host: '0.0.0.0', endpoint: 'https://member1.example.com:443' })
    expect(new X509Certificate(readFileSync(cfg.p2p.cert, 'utf8')).subjectAltName).to.equal('DNS:member1.example.com')
  })

  it('a member on PostgreSQL: its config names the database; a URL the node would refuse leaves nothing behind', async () => {
    const url = 'postgres://parley:secret@db.example:5432/acme'
    const m = await initMember(parseInitArgs([...without('--config'), '--config', join(dir, 'pg', 'member.json'), '--database-url', url]) as MemberInitOptions)
    expect(loadNodeConfig(m.config).database).to.deep.equal({ type: 'postgres', url })
    const bad = parseInitArgs([...without('--config'), '--config', join(dir, 'pgbad', 'member.json'), '--database-url', 'postgres://db.example:5432/']) as MemberInitOptions
    let err: Error | undefined
    await initMember(bad).catch((e: Error) => (err = e))
    expect(err?.message).to.match(/database.url must name the member's database/)
    expect(existsSync(join(dir, 'pgbad', 'member.json'))).to.equal(false)
  })

  it('refuses to overwrite a member, and leaves nothing behind when the node would refuse the config', async () => {
    const failure = (p: Promise<unknown>): Promise<Error | undefined> => p.then(() => undefined, (e: Error) => e)
    expect((await failure(initMember(parseInitArgs(required) as MemberInitOptions)))?.message).to.match(/member\.json exists already/)

    mkdirSync(join(dir, 'taken'), { recursive: true })
    writeFileSync(join(dir, 'taken', 'signing.key'), 'someone else\'s')
    const taken = await failure(initMember({ ...(parseInitArgs(required) as MemberInitOptions), config: join(dir, 'taken', 'member.json') }))
    expect(taken?.message).to.match(/signing\.key exist already: initialise each member in a folder of its own/)

    const bad = { ...(parseInitArgs(required) as MemberInitOptions), config: join(dir, 'bad', 'member.json'), org: 'not a name' }
    expect((await failure(initMember(bad)))?.message).to.match(/org "not a name" must be 1-64 letters/)
    for (const f of ['member.json', 'signing.key', 'tls/cert.pem', 'tls/key.pem']) expect(existsSync(join(dir, 'bad', f)), f).to.equal(false)
  })
})
