import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadChainConfig, loadIpfsConfig, ServiceConfigError } from '../../../../network/hosts/service-config.js'

describe('network/hosts/service-config: the chain and IPFS config files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-service-config-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string, value: unknown): string => {
    const f = join(dir, name)
    writeFileSync(f, typeof value === 'string' ? value : JSON.stringify(value))
    return f
  }

  it('reads host, ports and folder, the folder relative to the file and the host loopback by default', () => {
    expect(loadChainConfig(file('chain.json', { port: 8545, dir: 'chain' }))).to.deep.equal({ host: '127.0.0.1', port: 8545, dir: join(dir, 'chain') })
    expect(loadIpfsConfig(file('ipfs.json', { host: '0.0.0.0', apiPort: 5001, gatewayPort: 8080, dir: '/srv/ipfs' }))).to.deep.equal({
      host: '0.0.0.0', apiPort: 5001, gatewayPort: 8080, dir: '/srv/ipfs',
    })
  })

  it('names the file and the field that is wrong', () => {
    const fails = (f: () => unknown, pattern: RegExp): void => {
      expect(f).to.throw(ServiceConfigError, pattern)
    }
    fails(() => loadChainConfig(join(dir, 'missing.json')), /missing\.json: cannot read/)
    fails(() => loadChainConfig(file('list.json', [1])), /must be a JSON object/)
    fails(() => loadChainConfig(file('noport.json', { dir: 'x' })), /noport\.json: port is required/)
    fails(() => loadChainConfig(file('badport.json', { port: 70000, dir: 'x' })), /port must be a port number/)
    fails(() => loadChainConfig(file('badhost.json', { host: 'chain.example', port: 1, dir: 'x' })), /host must be an IP address to bind/)
    fails(() => loadIpfsConfig(file('nogw.json', { apiPort: 1, dir: 'x' })), /gatewayPort is required/)
    fails(() => loadIpfsConfig(file('nodir.json', { apiPort: 1, gatewayPort: 2, dir: '' })), /dir must be a non-empty path/)
  })
})
