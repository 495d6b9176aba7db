import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ContractFactory, formatEther, getAddress, getCreateAddress, parseEther, type InterfaceAbi } from 'ethers'
import { addressOfKey, keySigner, type TxSigner } from '../../node/chain/key-address.js'
import { JsonRpcClient } from '../../node/chain/rpc.js'
import { feeFields, getReceipt, pendingNonce, signTransaction, type RpcReceipt, type SignedTx } from '../../node/chain/tx.js'
import { projectRoot, sleep } from '../process.js'

/**
 * Hardhat's account #0, derived from its publicly known mnemonic ("test test ... junk") and funded at genesis.
 * Anyone can spend from it: it deploys and funds on the local chain only.
 */
export const HARDHAT_ACCOUNT_0_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'

export const BATCH_PIN_ARTIFACT = resolve(projectRoot, 'artifacts/contracts/BatchPin.sol/Firefly.json')

/**
 * Transactions from account #0 to one endpoint go one after another: a deploy and a funding round started
 * together would otherwise read the same pending nonce.
 */
const queues = new Map<string, Promise<unknown>>()
function oneAtATime<T>(rpc: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(rpc) ?? Promise.resolve()).then(fn)
  queues.set(rpc, run.catch(() => undefined))
  return run
}

/** Under automine the receipt exists once the send is answered; the short wait covers a chain that mines later. */
async function confirmed(rpc: JsonRpcClient, tx: SignedTx, what: string): Promise<RpcReceipt> {
  for (let waited = 0; waited < 60_000; waited += 100) {
    const receipt = await getReceipt(rpc, tx.hash)
    if (receipt !== null) {
      if (receipt.status === '0x0') throw new Error(`${what} (${tx.hash}) reverted`)
      return receipt
    }
    await sleep(100)
  }
  throw new Error(`${what} (${tx.hash}) was not mined within 60 s`)
}

/** Where the BatchPin deployment will land: account #0 sends it with `nonce`, and it is mined in `block`. */
export interface PredictedDeployment {
  address: string
  nonce: number
  block: number
}

/**
 * The contract address and block of the BatchPin deployment on a fresh chain (genesis only) when account #0 first
 * sends `transactionsBefore` other transactions (the members' funding), all in block 1 (fundAndDeploy). A CREATE
 * address is a function of the sender and its nonce alone, so member configs can name the contract before the chain
 * has even started; fundAndDeploy checks the deployment matches.
 */
export function predictDeployment(transactionsBefore: number): PredictedDeployment {
  const from = getAddress(addressOfKey(HARDHAT_ACCOUNT_0_KEY))
  return { address: getCreateAddress({ from, nonce: transactionsBefore }).toLowerCase(), nonce: transactionsBefore, block: 1 }
}

/**
 * On a fresh chain: funds `addresses` with `ether` each and deploys BatchPin, all in one block, as `expected`
 * (predictDeployment) says: mining is off while account #0 sends them (nonces 0 to n-1 fund, n deploys), then one
 * block is mined. One block rather than one per transaction: the chain journals and fsyncs each block it mines,
 * and a new network's chain shares the CPU with every member starting at once (20 fundings took seconds).
 */
export function fundAndDeploy(rpcUrl: string, addresses: string[], ether: string, expected: PredictedDeployment): Promise<{ address: string; block: number }> {
  return oneAtATime(rpcUrl, async () => {
    const { data } = await new ContractFactory(...readArtifact()).getDeployTransaction()
    const { rpc, wallet, chainId } = await accountZero(rpcUrl)
    const nonce = await pendingNonce(rpc, wallet.address)
    if (nonce !== 0 || expected.nonce !== addresses.length) {
      throw new Error(`cannot fund and deploy BatchPin at the predicted ${expected.address}: account #0 has nonce ${nonce} on ${rpcUrl}, and ${addresses.length} account(s) to fund before the deployment (nonce ${expected.nonce})`)
    }
    await assertCanFund(rpc, wallet.address, addresses.length, ether)
    const fees = await feeFields(rpc)
    const value = parseEther(ether)
    const txs: SignedTx[] = []
    for (const [i, to] of addresses.entries()) txs.push(await signTransaction(rpc, wallet, { chainId, nonce: i, to, data: '0x', value, gasLimit: 21_000n }, fees))
    txs.push(await signTransaction(rpc, wallet, { chainId, nonce: addresses.length, to: null, data }, fees))
    await rpc.call('evm_setAutomine', [false])
    try {
      for (const tx of txs) await rpc.call('eth_sendRawTransaction', [tx.raw])
      await rpc.call('evm_mine', [])
    } finally {
      await rpc.call('evm_setAutomine', [true])
    }
    const receipts = await Promise.all(txs.map((tx, i) => confirmed(rpc, tx, i < addresses.length ? `funding ${addresses[i]}` : 'the BatchPin deployment')))
    const deployment = receipts.at(-1)!
    const deployed = { address: String(deployment.contractAddress).toLowerCase(), block: Number(deployment.blockNumber) }
    if (deployed.address !== expected.address || receipts.some((r) => Number(r.blockNumber) !== expected.block)) {
      throw new Error(`BatchPin was deployed at ${deployed.address} in block ${deployed.block}, but the member configs were written for ${expected.address} from block ${expected.block}`)
    }
    return deployed
  })
}

/**
 * The account on `rpcUrl` that signs a funding or deployment (account #0 unless another key is given, as on a chain
 * of one's own: network/hosts/chain-command.ts), with the chain id its transactions carry.
 */
async function accountZero(rpcUrl: string, key = HARDHAT_ACCOUNT_0_KEY): Promise<{ rpc: JsonRpcClient; wallet: TxSigner; chainId: bigint }> {
  const rpc = new JsonRpcClient(rpcUrl)
  return { rpc, wallet: keySigner(key), chainId: BigInt(await rpc.call<string>('eth_chainId')) }
}

function readArtifact(): [InterfaceAbi, string] {
  if (!existsSync(BATCH_PIN_ARTIFACT)) throw new Error(`${BATCH_PIN_ARTIFACT} is missing: run \`npm run build:contracts\` first`)
  const artifact = JSON.parse(readFileSync(BATCH_PIN_ARTIFACT, 'utf8')) as { abi: InterfaceAbi; bytecode: string }
  return [artifact.abi, artifact.bytecode]
}

/** Refuses, before anything is sent, when account #0 cannot pay `count` × `ether`. */
async function assertCanFund(rpc: JsonRpcClient, from: string, count: number, ether: string): Promise<void> {
  const balance = BigInt(await rpc.call<string>('eth_getBalance', [from, 'pending']))
  if (balance < parseEther(ether) * BigInt(count)) {
    throw new Error(`account ${from} holds ${formatEther(balance)} ETH, not enough to fund ${count} account(s) with ${ether} ETH each`)
  }
}

/**
 * Deploys the BatchPin (`Firefly`) contract from the Hardhat artifact; signed locally so the chain journals it.
 * With `expected`, refuses to deploy from another nonce and fails when the contract lands at another address or
 * block than predicted (member configs already name them).
 */
export function deployBatchPin(rpcUrl: string, expected?: PredictedDeployment, key?: string): Promise<{ address: string; block: number }> {
  return oneAtATime(rpcUrl, async () => {
    const { data } = await new ContractFactory(...readArtifact()).getDeployTransaction()
    const { rpc, wallet, chainId } = await accountZero(rpcUrl, key)
    const nonce = await pendingNonce(rpc, wallet.address)
    if (expected !== undefined && nonce !== expected.nonce) {
      throw new Error(
        `cannot deploy BatchPin at the predicted ${expected.address}: account #0 (${wallet.address}) has nonce ${nonce} on ${rpcUrl}, not ${expected.nonce} (the chain is not the fresh one expected)`,
      )
    }
    const tx = await signTransaction(rpc, wallet, { chainId, nonce, to: null, data })
    await rpc.call('eth_sendRawTransaction', [tx.raw])
    const receipt = await confirmed(rpc, tx, 'the BatchPin deployment')
    if (typeof receipt.contractAddress !== 'string') throw new Error(`the BatchPin deployment (${tx.hash}) created no contract`)
    const deployed = { address: receipt.contractAddress.toLowerCase(), block: Number(receipt.blockNumber) }
    if (expected !== undefined && (deployed.address !== expected.address || deployed.block !== expected.block)) {
      throw new Error(
        `BatchPin was deployed at ${deployed.address} in block ${deployed.block}, but the member configs were written for ${expected.address} from block ${expected.block}`,
      )
    }
    return deployed
  })
}

/**
 * Sends `ether` to each address from account #0 (or the account of `key`), with nonces counted here, and waits for
 * every transfer. Refuses, before sending anything, when the account cannot pay for them all.
 */
export function fundAccounts(rpcUrl: string, addresses: string[], ether: string, key?: string): Promise<void> {
  return oneAtATime(rpcUrl, async () => {
    const { rpc, wallet, chainId } = await accountZero(rpcUrl, key)
    await assertCanFund(rpc, wallet.address, addresses.length, ether)
    let nonce = await pendingNonce(rpc, wallet.address)
    const sent: SignedTx[] = []
    for (const to of addresses) {
      const tx = await signTransaction(rpc, wallet, { chainId, nonce: nonce++, to, data: '0x', value: parseEther(ether), gasLimit: 21_000n })
      await rpc.call('eth_sendRawTransaction', [tx.raw])
      sent.push(tx)
    }
    for (const [i, tx] of sent.entries()) await confirmed(rpc, tx, `funding ${addresses[i]}`)
  })
}
