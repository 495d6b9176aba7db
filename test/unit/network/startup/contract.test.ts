import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NodeConfigFile } from '../../../../node/config.js'
import { predictDeployment } from '../../../../network/chain/deploy.js'
import type { NetworkDescription } from '../../../../network/description.js'
import { layout } from '../../../../network/layout.js'
import { ensureContract, fundMembers, locateContract } from '../../../../network/startup/contract.js'
import type { MemberPlan, NetworkPlan } from '../../../../network/startup/plan.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedEndpoint } from '../../../support/scripted-server.js'

/** Start-up's second phase: where the contract is before the chain runs, and the check of a recorded one. */
describe('network/startup/contract: where the BatchPin contract is', () => {
  let dir: string
  let chain: ScriptedEndpoint
  let code: string

  before(async () => {
    chain = await scriptedEndpoint((r) => (rpcMethod(r) === 'eth_getCode' ? rpcResult(r, code) : rpcResult(r, null)))
  })

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'contract-'))
    chain.requests.length = 0
  })

  afterEach(() => rmSync(dir, { recursive: true, force: true }))
  after(() => chain.close())

  const configured = (org: string, contract: string, firstBlock: number): MemberPlan => ({
    org,
    node: `n-${org}`,
    ports: { api: 1, p2p: 2 },
    cfg: { chain: { rpc: 'http://127.0.0.1:1', contract, firstBlock } } as NodeConfigFile,
  })
  const fresh = (org: string): MemberPlan => ({ org, node: `n-${org}`, ports: { api: 1, p2p: 2 } })
  const plan = (members: MemberPlan[], previous?: NetworkDescription): NetworkPlan => ({
    L: layout(dir),
    previous,
    ports: { chain: 1, ipfsApi: 2, ipfsGateway: 3 },
    members,
    database: { engine: 'sqljs' },
    timeout: 1000,
  })

  it('is the recorded one for a resumed network, whatever its members say', () => {
    const previous = { chain: { rpc: 'x', chainId: 1, contract: '0xabc', firstBlock: 4 } } as NetworkDescription
    const p = locateContract(plan([configured('org0', '0xdef', 1), fresh('org1')], previous))
    expect(p).to.deep.equal({ fresh: [fresh('org1')], recorded: { contract: '0xabc', firstBlock: 4 }, predicted: undefined, known: { contract: '0xabc', firstBlock: 4 } })
  })

  it('is the one the members were configured with when they agree, from the earliest first block', () => {
    const p = locateContract(plan([configured('org0', '0xABC', 7), configured('org1', '0xabc', 3), fresh('org2')]))
    expect(p.recorded).to.deep.equal({ contract: '0xabc', firstBlock: 3 })
    expect(p.predicted).to.equal(undefined)
    expect(p.fresh.map((m) => m.org)).to.deep.equal(['org2'])
  })

  it('is predicted from the new members to fund on a chain with no blocks, and unknown on one that mined without members', () => {
    const disagree = plan([configured('org0', '0xabc', 1), configured('org1', '0xdef', 1), fresh('org2'), fresh('org3')])
    const p = locateContract(disagree)
    expect(p.predicted).to.deep.equal(predictDeployment(2))
    expect(p.known).to.deep.equal({ contract: predictDeployment(2).address, firstBlock: 1 })
    mkdirSync(layout(dir).chainDir, { recursive: true })
    // The chain's journal (network/chain/journal.ts) with a block in it.
    writeFileSync(join(layout(dir).chainDir, 'chain-journal.jsonl'), '{"n":1}\n')
    expect(locateContract(plan([fresh('org0')]))).to.deep.equal({ fresh: [fresh('org0')], recorded: undefined, predicted: undefined, known: undefined })
  })

  it('refuses a recorded contract that is no longer on the chain, and keeps one that is', async () => {
    const recorded = { contract: '0xabc', firstBlock: 2 }
    code = '0x'
    try {
      await ensureContract(chain.url, recorded, layout(dir), () => {})
      expect.fail('a missing contract was kept')
    } catch (err) {
      expect((err as Error).message).to.equal(`BatchPin contract 0xabc is not on the chain any more (${layout(dir).chainDir} lost its journal?); remove ${layout(dir).root} to start a new network`)
    }
    code = '0x6080'
    expect(await ensureContract(chain.url, recorded, layout(dir), () => {})).to.deep.equal(recorded)
  })

  it('funds nobody, asking the chain nothing, when no member is new', async () => {
    const logged: string[] = []
    await fundMembers(chain.url, layout(dir), [], (l) => logged.push(l))
    expect([chain.requests.length, logged]).to.deep.equal([0, []])
  })
})
