import { expect } from 'chai'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, DEFAULT_PEER_QUOTAS, loadNodeConfig } from '../../../node/config.js'
import { DEFAULT_EXCHANGE_QUOTAS } from '../../../node/exchange/types.js'
import { DEFAULT_RETRY } from '../../../node/exchange/retry.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../node/core/limits.js'
import { MAX_MESSAGES_PER_BATCH } from '../../../node/model/index.js'

describe('member node config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-config-'))
  const key = '0x' + 'ab'.repeat(32)
  writeFileSync(join(dir, 'signing.key'), key + '\n')
  const good = {
    org: 'org0',
    node: 'node0',
    signingKeyFile: 'signing.key',
    chain: { rpc: 'http://127.0.0.1:8545/', contract: '0x5FbDB2315678afecb367f032d93F642f64180aa3', firstBlock: 1 },
    ipfs: { api: 'http://127.0.0.1:5001', gateway: 'http://127.0.0.1:8080' },
    api: { port: 5000 },
    p2p: { port: 5001, certFile: 'tls/cert.pem', keyFile: 'tls/key.pem' },
    dataDir: 'data',
  }
  const write = (cfg: unknown): string => {
    const f = join(dir, 'config.json')
    writeFileSync(f, JSON.stringify(cfg))
    return f
  }
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('resolves paths against the file, reads the key, normalises addresses and URLs, defaults hosts to loopback', () => {
    const cfg = loadNodeConfig(write(good))
    expect(cfg.signingKey).to.equal(key)
    expect(cfg.chain.contract).to.equal('0x5fbdb2315678afecb367f032d93f642f64180aa3')
    expect(cfg.chain.rpc).to.equal('http://127.0.0.1:8545')
    expect(cfg.api.host).to.equal('127.0.0.1')
    expect(cfg.p2p.cert).to.equal(join(dir, 'tls/cert.pem'))
    expect(cfg.dataDir).to.equal(join(dir, 'data'))
    expect(cfg.batch).to.deep.equal({})
    expect(loadNodeConfig(write({ ...good, batch: { size: 10, timeoutMs: 0 } })).batch).to.deep.equal({ size: 10, timeoutMs: 0 })
  })

  it('registers the p2p endpoint it listens on, or the one the file names (a host behind NAT or on every interface)', () => {
    expect(loadNodeConfig(write(good)).p2p.endpoint).to.equal('https://127.0.0.1:5001')
    expect(loadNodeConfig(write({ ...good, p2p: { ...good.p2p, host: '::1' } })).p2p.endpoint).to.equal('https://[::1]:5001')
    const wild = { ...good.p2p, host: '0.0.0.0' }
    expect(loadNodeConfig(write({ ...good, p2p: { ...wild, endpoint: 'https://member1.example.com:443/' } })).p2p).to.deep.include({ host: '0.0.0.0', endpoint: 'https://member1.example.com:443' })
    expect(() => loadNodeConfig(write({ ...good, p2p: wild }))).to.throw(ConfigError, /p2p.endpoint is required when p2p.host is 0.0.0.0/)
    expect(() => loadNodeConfig(write({ ...good, p2p: { ...good.p2p, endpoint: 'http://member1.example.com:3001' } }))).to.throw(ConfigError, /p2p.endpoint must use https:/)
    expect(() => loadNodeConfig(write({ ...good, p2p: { ...good.p2p, endpoint: 'https://member1.example.com:3001/x' } }))).to.throw(ConfigError, /p2p.endpoint must be https:\/\/host:port, with no path/)
  })

  it('takes the documented request limits by default and any of them from the file', () => {
    expect(loadNodeConfig(write(good)).limits).to.deep.equal(DEFAULT_REQUEST_LIMITS)
    const cfg = loadNodeConfig(write({ ...good, limits: { dataPerMessage: 5, valueBytes: 1024, bodyIdleMs: 1000 } }))
    expect(cfg.limits).to.deep.equal({ ...DEFAULT_REQUEST_LIMITS, dataPerMessage: 5, valueBytes: 1024, bodyIdleMs: 1000 })
  })

  it('retries a send to another member as the exchange does by default, or as p2p.retry says', () => {
    expect(loadNodeConfig(write(good)).p2p.retry).to.deep.equal({ attempts: 7, firstWaitMs: 500, maxWaitMs: 16_000 })
    expect(DEFAULT_RETRY).to.deep.equal({ attempts: 7, firstWaitMs: 500, maxWaitMs: 16_000 })
    const p2p = (retry: unknown): unknown => ({ ...good, p2p: { ...good.p2p, retry } })
    expect(loadNodeConfig(write(p2p({ attempts: 2, firstWaitMs: 100 }))).p2p.retry).to.deep.equal({ attempts: 2, firstWaitMs: 100, maxWaitMs: 16_000 })
    expect(() => loadNodeConfig(write(p2p([1])))).to.throw(ConfigError, /p2p.retry must be an object \{attempts, firstWaitMs, maxWaitMs\}/)
    expect(() => loadNodeConfig(write(p2p({ tries: 3 })))).to.throw(ConfigError, /p2p.retry.tries is not a setting; known: attempts, firstWaitMs, maxWaitMs/)
    expect(() => loadNodeConfig(write(p2p({ attempts: 0 })))).to.throw(ConfigError, /p2p.retry.attempts must be a whole number of at least 1/)
    expect(() => loadNodeConfig(write(p2p({ firstWaitMs: 2000, maxWaitMs: 1000 })))).to.throw(ConfigError, /p2p.retry.maxWaitMs \(1000\) must be at least p2p.retry.firstWaitMs \(2000\)/)
  })

  it('takes the documented peer quotas by default (the exchange\'s own defaults agree) and any of them from the file', () => {
    expect(loadNodeConfig(write(good)).quotas).to.deep.equal(DEFAULT_PEER_QUOTAS)
    expect(DEFAULT_PEER_QUOTAS).to.include(DEFAULT_EXCHANGE_QUOTAS)
    expect(DEFAULT_PEER_QUOTAS.unreferencedBlobBytesPerOrg).to.equal(1024 ** 3)
    expect(DEFAULT_PEER_QUOTAS.unreferencedBlobMs).to.equal(24 * 3_600_000)
    const cfg = loadNodeConfig(write({ ...good, quotas: { connections: 10, unpinnedBatchMs: 1000 } }))
    expect(cfg.quotas).to.deep.equal({ ...DEFAULT_PEER_QUOTAS, connections: 10, unpinnedBatchMs: 1000 })
    expect(() => loadNodeConfig(write({ ...good, quotas: { blobs: 1 } }))).to.throw(ConfigError, /quotas.blobs is not a quota; known: unreferencedBlobBytesPerOrg/)
    expect(() => loadNodeConfig(write({ ...good, quotas: { connections: 0 } }))).to.throw(ConfigError, /quotas.connections must be a whole number of at least 1/)
    expect(() => loadNodeConfig(write({ ...good, quotas: { inFlightBatchBytesPerOrg: 1024 } }))).to.throw(ConfigError, /quotas.inFlightBatchBytesPerOrg \(1024\) must be at least 67108864/)
    expect(() => loadNodeConfig(write({ ...good, quotas: { unpinnedBatchBytesPerOrg: 1024 } }))).to.throw(ConfigError, /quotas.unpinnedBatchBytesPerOrg \(1024\) must be at least 67108864/)
  })

  it('serves no admin routes unless the file says admin: true', () => {
    expect(loadNodeConfig(write(good)).admin).to.equal(false)
    expect(loadNodeConfig(write({ ...good, admin: true })).admin).to.equal(true)
    expect(loadNodeConfig(write({ ...good, admin: false })).admin).to.equal(false)
  })

  it('answers only loopback names and its own pages unless the file names more hosts and origins', () => {
    expect(loadNodeConfig(write(good)).api).to.deep.equal({ host: '127.0.0.1', port: 5000, allowedHosts: [], allowedOrigins: [] })
    const api = { port: 5000, allowedHosts: ['Parley.Example', 'api.example:8443', '[FD00::1]'], allowedOrigins: ['https://App.example:443', 'http://ui.example:3000/'] }
    expect(loadNodeConfig(write({ ...good, api })).api).to.deep.include({
      allowedHosts: ['parley.example', 'api.example:8443', '[fd00::1]'],
      allowedOrigins: ['https://app.example', 'http://ui.example:3000'],
    })
  })

  it('keeps the state in sql.js unless the file names a PostgreSQL database', () => {
    expect(loadNodeConfig(write(good)).database).to.deep.equal({ type: 'sqljs' })
    expect(loadNodeConfig(write({ ...good, database: { type: 'sqljs' } })).database).to.deep.equal({ type: 'sqljs' })
    const url = 'postgres://parley:pw@127.0.0.1:5432/org0_node0'
    expect(loadNodeConfig(write({ ...good, database: { type: 'postgres', url } })).database).to.deep.equal({ type: 'postgres', url })
  })

  it('takes absolute paths as written, a start block of 0 by default, and the API host and console folder the file names', () => {
    const abs = join(dir, 'signing.key')
    const cfg = loadNodeConfig(write({ ...good, signingKeyFile: abs, chain: { ...good.chain, firstBlock: undefined }, api: { host: '0.0.0.0', port: 5000 }, uiDir: '/srv/ui', dataDir: '/var/parley' }))
    expect(cfg.signingKey).to.equal(key)
    expect(cfg.chain.firstBlock).to.equal(0)
    expect(cfg.api.host).to.equal('0.0.0.0')
    expect(cfg.uiDir).to.equal('/srv/ui')
    expect(cfg.dataDir).to.equal('/var/parley')
    expect(loadNodeConfig(write({ ...good, uiDir: 'ui' })).uiDir).to.equal(join(dir, 'ui'))
    expect(loadNodeConfig(write({ ...good, uiDir: null }))).to.not.have.property('uiDir')
  })

  it('refuses a signing key file that holds something other than one private key, naming the file', () => {
    writeFileSync(join(dir, 'short.key'), '0x' + 'ab'.repeat(31))
    expect(() => loadNodeConfig(write({ ...good, signingKeyFile: 'short.key' }))).to.throw(ConfigError, new RegExp(`signingKeyFile ${join(dir, 'short.key')} must hold a 0x-prefixed 32-byte hex private key`))
  })

  const bad: [string, unknown, RegExp][] = [
    ['a config that is not an object', [good], /config.json: config must be an object/],
    ['a bad node name', { ...good, node: 'node/0' }, /node "node\/0" must be 1-64 letters/],
    ['an empty org', { ...good, org: '' }, /org must be a non-empty string/],
    ['a negative start block', { ...good, chain: { ...good.chain, firstBlock: -1 } }, /chain.firstBlock must be a block number/],
    ['a start block that is not a whole number', { ...good, chain: { ...good.chain, firstBlock: '7' } }, /chain.firstBlock must be a block number/],
    ['an IPFS gateway of another scheme', { ...good, ipfs: { ...good.ipfs, gateway: 'ftp://127.0.0.1' } }, /ipfs.gateway must use http: or https:: ftp:\/\/127.0.0.1/],
    ['an empty API host', { ...good, api: { host: '', port: 5000 } }, /api.host must be a non-empty string/],
    ['a console folder that is not a string', { ...good, uiDir: 7 }, /uiDir must be a non-empty string/],
    ['a database section that is not an object', { ...good, database: 'postgres' }, /database must be an object \{"type": "sqljs"\} or \{"type": "postgres", "url": "postgres:\/\/\.\.\."\}/],
    ['a database list', { ...good, database: [] }, /database must be an object/],
    ['a URL for sql.js', { ...good, database: { url: 'postgres://h/d' } }, /database.url is only for database.type "postgres"/],
    ['a database URL that is not a URL', { ...good, database: { type: 'postgres', url: 'not a url' } }, /database.url must use postgres: or postgresql:/],
    ['a database URL naming no host', { ...good, database: { type: 'postgres', url: 'postgres:///org0' } }, /database.url must name a host/],
    ['a database URL with a path under the database', { ...good, database: { type: 'postgres', url: 'postgresql://h:5432/org0/x' } }, /database.url must name the member's database/],
    ['an allowed origin that is not a URL', { ...good, api: { port: 5000, allowedOrigins: ['app.example'] } }, /api.allowedOrigins\[0\] must be an origin such as/],
    ['an allowed host that is empty', { ...good, api: { port: 5000, allowedHosts: [''] } }, /api.allowedHosts must be a list of non-empty strings/],
    ['a URL limit longer than the request head', { ...good, limits: { urlBytes: 4096, headerBytes: 2048 } }, /limits.urlBytes \(4096\) must be at most limits.headerBytes \(2048\): the URL is part of the request head/],
    ['limits that are a list', { ...good, limits: [1] }, /limits must be an object/],
    ['quotas that are a number', { ...good, quotas: 5 }, /quotas must be an object/],
    ['fewer connections per org than per certificate', { ...good, quotas: { connectionsPerOrg: 2, connectionsPerCertificate: 3 } }, /quotas.connectionsPerOrg \(2\) must be at least quotas.connectionsPerCertificate \(3\)/],
    ['a batch section that is a list', { ...good, batch: [10] }, /batch must be an object \{size, timeoutMs, payloadLimit\}/],
    ['a negative batch timeout', { ...good, batch: { timeoutMs: -1 } }, /batch.timeoutMs must be a whole number$/],
    ['a fractional payload limit', { ...good, batch: { payloadLimit: 1.5 } }, /batch.payloadLimit must be a whole number of at least 1/],
    ['an unknown database engine', { ...good, database: { type: 'mysql' } }, /database.type must be "sqljs" or "postgres": "mysql"/],
    ['a postgres database without a URL', { ...good, database: { type: 'postgres' } }, /database.url must be a postgres:\/\/ URL/],
    ['a database URL of another scheme', { ...good, database: { type: 'postgres', url: 'http://127.0.0.1/x' } }, /database.url must use postgres: or postgresql:/],
    ['a database URL naming no database', { ...good, database: { type: 'postgres', url: 'postgres://127.0.0.1:5432' } }, /database.url must name the member's database/],
    ['an unknown database setting', { ...good, database: { type: 'postgres', url: 'postgres://h/d', pool: 4 } }, /database.pool is not a database setting/],
    ['allowed hosts that are not a list', { ...good, api: { port: 5000, allowedHosts: 'parley.example' } }, /api.allowedHosts must be a list of non-empty strings/],
    ['an allowed host that is a URL', { ...good, api: { port: 5000, allowedHosts: ['https://parley.example'] } }, /api.allowedHosts\[0\] must be a host name, optionally with :port/],
    ['an allowed origin with a path', { ...good, api: { port: 5000, allowedOrigins: ['https://app.example/ui'] } }, /api.allowedOrigins\[0\] must be an origin such as https:\/\/app.example:8443/],
    ['an allowed origin that is not http', { ...good, api: { port: 5000, allowedOrigins: ['file:///x'] } }, /api.allowedOrigins\[0\] must be an origin/],
    ['a bad org name', { ...good, org: 'org 0' }, /org "org 0"/],
    ['a contract that is not an address', { ...good, chain: { ...good.chain, contract: '0x12' } }, /chain.contract is not an address/],
    ['a URL that is not one', { ...good, ipfs: { ...good.ipfs, api: 'nope' } }, /ipfs.api is not a URL/],
    ['a port out of range', { ...good, api: { port: 70000 } }, /api.port must be a port number/],
    ['a missing key file', { ...good, signingKeyFile: 'missing.key' }, /cannot read signingKeyFile/],
    ['no chain section', { ...good, chain: undefined }, /chain must be an object/],
    ['a batch size of zero', { ...good, batch: { size: 0 } }, /batch.size must be a whole number of at least 1/],
    ['a batch size receivers would refuse', { ...good, batch: { size: MAX_MESSAGES_PER_BATCH + 1 } }, /batch.size must be at most 10000 messages \(members refuse batches of more\)/],
    ['a payload limit receivers could be handed more than they read', { ...good, batch: { payloadLimit: 16 * 1024 * 1024 + 1 } }, /batch.payloadLimit must be at most 16777216 bytes \(members refuse batches over 67108864\)/],
    ['an admin flag that is not a boolean', { ...good, admin: 'yes' }, /admin must be true or false/],
    ['an unknown limit', { ...good, limits: { bodyBytes: 5 } }, /limits.bodyBytes is not a limit; known: jsonBodyBytes, /],
    ['a limit that is not a whole number', { ...good, limits: { valueBytes: 1.5 } }, /limits.valueBytes must be a whole number of at least 1/],
    ['more data items than other members take', { ...good, limits: { dataPerMessage: 1001 } }, /limits.dataPerMessage must be at most 1000 \(other members reject a message with more\)/],
    ['more topics than other members take', { ...good, limits: { topicsPerMessage: 11 } }, /limits.topicsPerMessage must be at most 10/],
    ['an in-flight budget smaller than one body', { ...good, limits: { jsonBodyBytes: 2048, inFlightBodyBytes: 1024 } }, /limits.inFlightBodyBytes \(1024\) must be at least limits.jsonBodyBytes \(2048\)/],
    ['an address share smaller than one body', { ...good, limits: { jsonBodyBytes: 2048, addressBodyBytes: 1024 } }, /limits.addressBodyBytes \(1024\) must be at least limits.jsonBodyBytes \(2048\)/],
  ]
  for (const [what, cfg, re] of bad) {
    it(`names the problem for ${what}`, () => {
      const f = write(cfg)
      expect(() => loadNodeConfig(f)).to.throw(ConfigError, re)
    })
  }

  it('says which file cannot be parsed', () => {
    const f = join(dir, 'broken.json')
    writeFileSync(f, '{')
    expect(() => loadNodeConfig(f)).to.throw(ConfigError, /broken.json: cannot read/)
  })
})
