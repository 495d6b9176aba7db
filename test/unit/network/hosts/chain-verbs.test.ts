import { expect } from 'chai'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseChainVerb, runChainVerb } from '../../../../network/hosts/chain-verbs.js'

describe('npm run chain -- deploy|fund', () => {
  const A = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'
  const B = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc'

  it('reads the arguments; funding defaults to what the local network gives a member', () => {
    expect(parseChainVerb('deploy', ['--rpc', 'http://127.0.0.1:8545'])).to.deep.equal({ verb: 'deploy', rpc: 'http://127.0.0.1:8545' })
    expect(parseChainVerb('fund', ['--rpc', 'https://rpc.example', '--to', `${A},${B}`, '--key-file', 'k'])).to.deep.equal({ verb: 'fund', rpc: 'https://rpc.example', to: [A, B], ether: '50', keyFile: 'k' })
    expect(parseChainVerb('fund', ['--rpc', 'http://h:1', '--to', A, '--ether', '0.5'])).to.deep.include({ ether: '0.5' })
  })

  it('says what is wrong with them', () => {
    expect(parseChainVerb('deploy', [])).to.match(/--rpc must be the http\(s\) URL/)
    expect(parseChainVerb('deploy', ['--rpc', 'ws://h:1'])).to.match(/--rpc must be the http\(s\) URL/)
    expect(parseChainVerb('deploy', ['--rpc', 'http://h:1', '--to', A])).to.match(/deploy takes no --to or --ether/)
    expect(parseChainVerb('fund', ['--rpc', 'http://h:1'])).to.match(/--to must name the addresses/)
    expect(parseChainVerb('fund', ['--rpc', 'http://h:1', '--to', `${A},0x12`])).to.equal('--to: not an address: 0x12')
    expect(parseChainVerb('fund', ['--rpc', 'http://h:1', '--to', A, '--ether=-1'])).to.match(/--ether must be a positive amount/)
  })

  describe('on a chain other than the local one', () => {
    let server: Server
    let rpc: string
    const dir = mkdtempSync(join(tmpdir(), 'parley-chain-verbs-'))
    const methods: string[] = []
    before(async () => {
      // A JSON-RPC endpoint of chain 1 that answers only eth_chainId: nothing may be signed or sent to it.
      server = createServer((req, res) => {
        let body = ''
        req.on('data', (c: Buffer) => (body += c.toString()))
        req.on('end', () => {
          const call = JSON.parse(body) as { id: number; method: string }
          methods.push(call.method)
          res.setHeader('content-type', 'application/json')
          res.end(JSON.stringify(call.method === 'eth_chainId' ? { jsonrpc: '2.0', id: call.id, result: '0x1' } : { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'no' } }))
        })
      })
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      rpc = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    after(async () => {
      await new Promise((r) => server.close(r))
      rmSync(dir, { recursive: true, force: true })
    })

    it("refuses to pay with Hardhat's public account #0, and sends nothing", async () => {
      for (const verb of [parseChainVerb('deploy', ['--rpc', rpc]), parseChainVerb('fund', ['--rpc', rpc, '--to', A])]) {
        let err: Error | undefined
        await runChainVerb(verb as Exclude<typeof verb, string>, () => {}).catch((e: Error) => (err = e))
        expect(err?.message).to.equal(`${rpc} is chain 1, not the local chain (31337): give --key-file with the key of a funded account`)
      }
      expect(methods.every((m) => m === 'eth_chainId')).to.equal(true)
    })

    it('refuses a key file that holds no private key', async () => {
      writeFileSync(join(dir, 'bad.key'), 'not a key\n')
      let err: Error | undefined
      await runChainVerb({ verb: 'deploy', rpc, keyFile: join(dir, 'bad.key') }, () => {}).catch((e: Error) => (err = e))
      expect(err?.message).to.match(/bad\.key must hold a 0x-prefixed 32-byte hex private key/)
    })
  })
})
