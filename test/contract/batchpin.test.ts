import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { randomBytes, randomUUID } from 'node:crypto'
import {
  Contract,
  ContractFactory,
  Interface,
  JsonRpcProvider,
  Wallet,
  ZeroHash,
  hexlify,
  type InterfaceAbi,
  type Log,
  type TransactionReceipt,
} from 'ethers'
import { BATCH_PIN_ARTIFACT, deployBatchPin, fundAccounts } from '../../network/chain/deploy.js'
import { BATCH_PIN_TOPIC, batchPinInterface, decodeBatchPinLog, type RpcLog } from '../../node/chain/abi.js'
import { uuidsBytes32 } from '../../node/core/hashes.js'
import type { BatchId, TxId } from '../../node/core/ids.js'
import { assertCompiled, startChain, stopAllChains, type TestChain } from '../support/chain-process.js'

const TOPIC0 = '0x805721bc246bccc732581be0c0aa2dd8f7ec93e97ba4b307be84428c98b0a12f'

/** A relay contract, compiled here, to show that `author` is tx.origin and not the calling contract. */
const RELAY_SOURCE = `// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.4;
contract Relay {
  function relay(address target, bytes calldata data) external {
    (bool ok, ) = target.call(data);
    require(ok, "relayed call failed");
  }
}`

function compileRelay(): { abi: InterfaceAbi; bytecode: string } {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string }
  const out = JSON.parse(solc.compile(JSON.stringify({
    language: 'Solidity',
    sources: { 'Relay.sol': { content: RELAY_SOURCE } },
    settings: { outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  }))) as { contracts: Record<string, Record<string, { abi: InterfaceAbi; evm: { bytecode: { object: string } } }>> }
  const relay = out.contracts['Relay.sol']!.Relay!
  return { abi: relay.abi, bytecode: '0x' + relay.evm.bytecode.object }
}

const randomHash = (): string => hexlify(randomBytes(32))

describe('BatchPin contract (Firefly, network version 2)', function () {
  this.timeout(120_000)
  let chain: TestChain
  let provider: JsonRpcProvider
  let sender: Wallet
  let contract: Contract
  let artifactInterface: Interface

  before(async () => {
    assertCompiled()
    chain = await startChain()
    const artifact = JSON.parse(readFileSync(BATCH_PIN_ARTIFACT, 'utf8')) as { abi: InterfaceAbi }
    artifactInterface = new Interface(artifact.abi)
    const { address } = await deployBatchPin(chain.rpc)
    // A fresh key rather than Hardhat's account #0, so `author` is shown to be the actual signer.
    const key = Wallet.createRandom().privateKey
    // No call caching, or back-to-back transactions read a stale nonce.
    provider = new JsonRpcProvider(chain.rpc, 31337, { staticNetwork: true, cacheTimeout: -1 })
    sender = new Wallet(key, provider)
    await fundAccounts(chain.rpc, [sender.address], '10')
    contract = new Contract(address, artifact.abi, sender)
  })

  after(async () => {
    provider?.destroy()
    await stopAllChains()
  })

  async function mined(p: Promise<{ wait(): Promise<TransactionReceipt | null> }>): Promise<TransactionReceipt> {
    const receipt = await (await p).wait()
    if (receipt === null) throw new Error('no receipt')
    return receipt
  }

  function onlyBatchPin(receipt: TransactionReceipt): Log {
    expect(receipt.logs).to.have.length(1)
    const log = receipt.logs[0]!
    expect(log.topics).to.deep.equal([TOPIC0])
    return log
  }

  it('has the ABI identity FireFly expects', () => {
    expect(artifactInterface.getEvent('BatchPin')!.topicHash).to.equal(TOPIC0)
    expect(BATCH_PIN_TOPIC).to.equal(TOPIC0)
    expect(artifactInterface.getFunction('pinBatch')!.selector).to.equal('0x48ce1dcc')
    expect(artifactInterface.getFunction('networkAction')!.selector).to.equal('0xfb9066c1')
    expect(artifactInterface.getFunction('networkVersion')!.selector).to.equal('0x97eacfe6')
    // The node's hand-written ABI and the compiled contract agree.
    for (const name of ['pinBatch', 'networkAction', 'networkVersion']) {
      expect(batchPinInterface.getFunction(name)!.selector).to.equal(artifactInterface.getFunction(name)!.selector)
    }
  })

  it('reports networkVersion() 2', async () => {
    expect(await contract.getFunction('networkVersion')()).to.equal(2n)
  })

  for (const count of [0, 500]) {
    it(`pins a batch with ${count} contexts and every field round-trips`, async () => {
      const txId = randomUUID() as TxId
      const batchId = randomUUID() as BatchId
      const uuids = uuidsBytes32(txId, batchId)
      const batchHash = randomHash()
      const payloadRef = count === 0 ? '' : 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'
      const contexts = Array.from({ length: count }, randomHash)
      const receipt = await mined(contract.getFunction('pinBatch')(uuids, batchHash, payloadRef, contexts))
      const log = onlyBatchPin(receipt)
      const block = await provider.getBlock(receipt.blockNumber)
      const tx = await provider.getTransaction(receipt.hash)

      const ev = artifactInterface.parseLog(log)!
      expect(ev.name).to.equal('BatchPin')
      expect(ev.args.getValue('author')).to.equal(sender.address)
      expect(ev.args.getValue('author')).to.equal(tx!.from) // a direct call: sender == tx.origin
      expect(ev.args.getValue('timestamp')).to.equal(BigInt(block!.timestamp))
      expect(ev.args.getValue('action')).to.equal('firefly:batch_pin')
      expect(ev.args.getValue('uuids')).to.equal(uuids)
      expect(ev.args.getValue('batchHash')).to.equal(batchHash)
      expect(ev.args.getValue('payloadRef')).to.equal(payloadRef)
      expect(Array.from(ev.args.getValue('contexts') as Iterable<string>)).to.deep.equal(contexts)

      // And through the node's decoder, in the node's terms.
      const decoded = decodeBatchPinLog({
        ...log,
        blockNumber: '0x' + log.blockNumber.toString(16),
        transactionIndex: '0x' + log.transactionIndex.toString(16),
        logIndex: '0x' + log.index.toString(16),
        topics: [...log.topics],
      } as RpcLog)
      expect(decoded).to.deep.include({
        author: sender.address.toLowerCase(),
        txId,
        batchId,
        batchHash: batchHash.slice(2),
        payloadRef,
        action: 'firefly:batch_pin',
        timestamp: block!.timestamp,
        blockNumber: receipt.blockNumber,
        txHash: receipt.hash,
      })
      expect(decoded.contexts).to.deep.equal(contexts.map((c) => c.slice(2)))
      expect(decoded.protocolId).to.match(/^\d{12}\/\d{6}\/\d{6}$/)
    })
  }

  it('reads its arguments from calldata: the EVM steps of a pin do not grow with its contexts', async () => {
    // Declared `memory`, the contexts were copied into memory one by one and encoded again one by one for the event:
    // 10,530 EVM steps for 200 contexts against 370 from calldata (each array copied by one calldatacopy). The
    // gas is nearly the same, but Hardhat traces every step, and those steps were half the chain's CPU per message.
    const steps = async (count: number): Promise<number> => {
      const receipt = await mined(contract.getFunction('pinBatch')(randomHash(), randomHash(), 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', Array.from({ length: count }, randomHash)))
      const trace = (await provider.send('debug_traceTransaction', [receipt.hash, { disableStorage: true, disableStack: true, disableMemory: true }])) as { structLogs: unknown[] }
      return trace.structLogs.length
    }
    const one = await steps(1)
    expect(await steps(200)).to.equal(one)
    expect(await steps(500)).to.equal(one)
  })

  it('emits network actions with no batch and no contexts', async () => {
    const receipt = await mined(contract.getFunction('networkAction')('firefly:terminate', 'some payload'))
    const ev = artifactInterface.parseLog(onlyBatchPin(receipt))!
    expect(ev.args.getValue('author')).to.equal(sender.address)
    expect(ev.args.getValue('action')).to.equal('firefly:terminate')
    expect(ev.args.getValue('uuids')).to.equal(ZeroHash)
    expect(ev.args.getValue('batchHash')).to.equal(ZeroHash)
    expect(ev.args.getValue('payloadRef')).to.equal('some payload')
    expect(Array.from(ev.args.getValue('contexts') as Iterable<string>)).to.deep.equal([])
  })

  it('records tx.origin as the author when called through another contract', async () => {
    const { abi, bytecode } = compileRelay()
    const relay = (await (await new ContractFactory(abi, bytecode, sender).deploy()).waitForDeployment()) as Contract
    const data = contract.interface.encodeFunctionData('pinBatch', [randomHash(), randomHash(), '', [randomHash()]])
    const receipt = await mined(relay.getFunction('relay')(await contract.getAddress(), data))
    const log = onlyBatchPin(receipt)
    expect(log.address.toLowerCase()).to.equal((await contract.getAddress()).toLowerCase())
    expect(artifactInterface.parseLog(log)!.args.getValue('author')).to.equal(sender.address)
    expect(sender.address).to.not.equal(await relay.getAddress())
  })
})
