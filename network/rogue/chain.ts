/**
 * A hostile member's pinBatch transactions: signed with the key it chooses (a member's own, one of Hardhat's funded
 * accounts, or a fresh funded one), priced to go ahead of a given tip when it races another pin in the pool, and sent
 * whether the chain mines or not. Nothing here waits on a node: the chain is the only party.
 */
import { readFileSync } from 'node:fs'
import { Wallet } from 'ethers'
import { encodePinBatch } from '../../node/chain/abi.js'
import { JsonRpcClient } from '../../node/chain/rpc.js'
import { eip1559Fees, getReceipt, isNonceError, pendingNonce, priorityFee, signTransaction } from '../../node/chain/tx.js'
import { fundAccounts } from '../chain/deploy.js'
import { deriveHdPrivateKeys } from '../chain/hd-accounts.js'
import type { Layout } from '../layout.js'
import type { PinArgs } from './batches.js'
import { sleep } from '../process.js'

/** Hardhat's default accounts: its public test mnemonic, funded and unlocked on every Hardhat chain. */
const HARDHAT_ACCOUNTS = { mnemonic: 'test test test test test test test test test test test junk', path: "m/44'/60'/0'/0", passphrase: '' }
export const HARDHAT_ACCOUNT_COUNT = 20

/** Whose key a hostile transaction is signed with. */
export type KeySource = { org: string } | { account: number } | { fresh: true }

export interface RogueKey {
  wallet: Wallet
  /** Lowercase address. */
  address: string
  /** In words: `org1's key`, `Hardhat account #15`, `a fresh key`. */
  label: string
}

/** The key of `source`: read from the member's folder, derived from Hardhat's mnemonic, or made (and funded) now. */
export async function rogueKey(L: Layout, rpc: string, source: KeySource): Promise<RogueKey> {
  let wallet: Wallet
  let label: string
  if ('org' in source) {
    wallet = new Wallet(readFileSync(L.member(source.org).signingKey, 'utf8').trim())
    label = `${source.org}'s key`
  } else if ('account' in source) {
    const n = source.account
    if (!Number.isInteger(n) || n < 0 || n >= HARDHAT_ACCOUNT_COUNT) throw new RangeError(`--account must be one of Hardhat's accounts, 0 to ${HARDHAT_ACCOUNT_COUNT - 1} (got ${n})`)
    const key = deriveHdPrivateKeys({ ...HARDHAT_ACCOUNTS, initialIndex: n, count: 1 })![0]!
    wallet = new Wallet(key)
    label = `Hardhat account #${n}`
  } else {
    wallet = Wallet.createRandom() as unknown as Wallet
    // Funded by account #0, which waits for the funding to be mined: a fresh key needs the chain to mine.
    await fundAccounts(rpc, [wallet.address], '1')
    label = 'a fresh key'
  }
  return { wallet, address: wallet.address.toLowerCase(), label }
}

export interface SentPin {
  txHash: string
  /** The block it was mined in; absent while the chain does not mine. */
  block?: number
}

/**
 * Sends pinBatch(args) from `key`. `tipAbove`: a tip (wei per gas) to outbid, so that the chain's pool, which orders
 * by fee, mines this one first. A nonce taken meanwhile by the member's own node (the same key) is counted again.
 * Waits for the receipt while the chain automines.
 */
export async function sendPin(rpcUrl: string, contract: string, key: RogueKey, args: PinArgs, opts: { tipAbove?: bigint } = {}): Promise<SentPin> {
  const rpc = new JsonRpcClient(rpcUrl)
  try {
    const chainId = BigInt(await rpc.call<string>('eth_chainId'))
    const block = await rpc.call<{ baseFeePerGas?: string }>('eth_getBlockByNumber', ['latest', false])
    const baseFee = BigInt(block.baseFeePerGas ?? '0x0')
    const suggested = await priorityFee(rpc)
    const tip = opts.tipAbove !== undefined && opts.tipAbove >= suggested ? opts.tipAbove * 2n + 1_000_000_000n : suggested
    const data = encodePinBatch(args)
    let txHash: string | undefined
    for (let attempt = 0; txHash === undefined; attempt++) {
      const nonce = await pendingNonce(rpc, key.address)
      const signed = await signTransaction(rpc, key.wallet, { chainId, nonce, to: contract, data }, eip1559Fees(baseFee, tip))
      try {
        await rpc.call('eth_sendRawTransaction', [signed.raw])
        txHash = signed.hash
      } catch (err) {
        if (!isNonceError(err) || attempt >= 5) throw err
        await sleep(50)
      }
    }
    if (!(await rpc.call<boolean>('hardhat_getAutomine', []).catch(() => true))) return { txHash }
    for (let waited = 0; waited < 30_000; waited += 50) {
      const receipt = await getReceipt(rpc, txHash)
      if (receipt) {
        if (receipt.status === '0x0') throw new Error(`pinBatch ${txHash} reverted`)
        return { txHash, block: Number(receipt.blockNumber) }
      }
      await sleep(50)
    }
    throw new Error(`pinBatch ${txHash} was not mined within 30 s`)
  } finally {
    rpc.close()
  }
}
