import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ContractFactory, parseEther, Wallet, type InterfaceAbi } from 'ethers'
import { JsonRpcClient } from '../../node/chain/rpc.js'
import { getReceipt, pendingNonce, signTransaction, type RpcReceipt, type SignedTx } from '../../node/chain/tx.js'
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

/** Deploys the BatchPin (`Firefly`) contract from the Hardhat artifact; signed locally so the chain journals it. */
export function deployBatchPin(rpcUrl: string): Promise<{ address: string; block: number }> {
  return oneAtATime(rpcUrl, async () => {
    if (!existsSync(BATCH_PIN_ARTIFACT)) throw new Error(`${BATCH_PIN_ARTIFACT} is missing: run \`npx hardhat compile\` first`)
    const artifact = JSON.parse(readFileSync(BATCH_PIN_ARTIFACT, 'utf8')) as { abi: InterfaceAbi; bytecode: string }
    const { data } = await new ContractFactory(artifact.abi, artifact.bytecode).getDeployTransaction()
    const rpc = new JsonRpcClient(rpcUrl)
    const wallet = new Wallet(HARDHAT_ACCOUNT_0_KEY)
    const chainId = BigInt(await rpc.call<string>('eth_chainId'))
    const nonce = await pendingNonce(rpc, wallet.address)
    const tx = await signTransaction(rpc, wallet, { chainId, nonce, to: null, data })
    await rpc.call('eth_sendRawTransaction', [tx.raw])
    const receipt = await confirmed(rpc, tx, 'the BatchPin deployment')
    if (typeof receipt.contractAddress !== 'string') throw new Error(`the BatchPin deployment (${tx.hash}) created no contract`)
    return { address: receipt.contractAddress.toLowerCase(), block: Number(receipt.blockNumber) }
  })
}

/** Sends `ether` to each address from account #0, with nonces counted here, and waits for every transfer. */
export function fundAccounts(rpcUrl: string, addresses: string[], ether: string): Promise<void> {
  return oneAtATime(rpcUrl, async () => {
    const rpc = new JsonRpcClient(rpcUrl)
    const wallet = new Wallet(HARDHAT_ACCOUNT_0_KEY)
    const chainId = BigInt(await rpc.call<string>('eth_chainId'))
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
