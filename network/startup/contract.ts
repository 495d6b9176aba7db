import { readFileSync } from 'node:fs'
import { addressOfKey } from '../../node/chain/key-address.js'
import type { Layout } from '../layout.js'
import { deployBatchPin, fundAccounts, fundAndDeploy, predictDeployment, type PredictedDeployment } from '../chain/deploy.js'
import { journalHasBlocks } from '../chain/journal.js'
import { rpcCall } from '../probe.js'
import type { MemberPlan, NetworkPlan } from './plan.js'

/** Where BatchPin is on the chain, and the block the members read from. */
export interface ContractAt {
  contract: string
  firstBlock: number
}

/** Where the contract is, as far as it can be known before the chain has started. */
export interface ContractPlacement {
  /** Members to create: in the plan, with no config yet. */
  fresh: MemberPlan[]
  /** A resumed network's recorded contract, or the one the folder's members were configured with. */
  recorded: ContractAt | undefined
  /** For a new network, where the deployment will put it. */
  predicted: PredictedDeployment | undefined
  /** Either of the two: known before the chain runs, so members can be configured and started while it boots. */
  known: ContractAt | undefined
}

/**
 * What account #0 (10,000 ETH at genesis) gives each new member: enough for any member, little enough for ~200 of
 * them. A member pays ~4e-5 ETH for a pin of one message and ~3e-4 ETH for one of a full batch (~180 messages, 10
 * topics), so 50 ETH pays for over a hundred thousand full batches, more messages than a member's in-memory database
 * holds.
 */
export const FUNDING_ETHER = '50'

/**
 * Start-up phase 2: where the contract is, known before the chain has started when possible: a resumed network's
 * recorded address (or, in a folder whose first start failed before network.json was written, the one its members
 * were configured with); for a new network, the address it will get (a CREATE address is a function of deployer and
 * nonce: account #0 funds the new members, then deploys, in one block). Only a folder whose chain mined blocks
 * without its members ever being configured has to wait for the chain and the deployment before members can be
 * configured.
 */
export function locateContract(plan: NetworkPlan): ContractPlacement {
  const fresh = plan.members.filter((m) => m.cfg === undefined)
  const recorded = plan.previous ? { contract: plan.previous.chain.contract, firstBlock: plan.previous.chain.firstBlock } : contractOfMembers(plan.members)
  const predicted = recorded === undefined && !journalHasBlocks(plan.L.chainDir) ? predictDeployment(fresh.length) : undefined
  const known = recorded ?? (predicted ? { contract: predicted.address, firstBlock: predicted.block } : undefined)
  return { fresh, recorded, predicted, known }
}

/** The signing addresses of new members (their keys are written by then). */
function addressesOf(L: Layout, fresh: MemberPlan[]): string[] {
  return fresh.map((m) => addressOfKey(readFileSync(L.member(m.org).signingKey, 'utf8').trim()))
}

const fundedLine = (fresh: MemberPlan[]): string => `funded ${fresh.map((m) => m.org).join(', ')} with ${FUNDING_ETHER} ETH each`

/** A new network: new members funded and the contract deployed, in one block and as predicted. */
export async function fundAndDeployPredicted(rpc: string, L: Layout, fresh: MemberPlan[], predicted: PredictedDeployment, log: (line: string) => void): Promise<ContractAt> {
  const deployed = await fundAndDeploy(rpc, addressesOf(L, fresh), FUNDING_ETHER, predicted)
  log(fundedLine(fresh))
  log(`deployed BatchPin at ${deployed.address} (block ${deployed.block}, with the funding), as predicted`)
  return { contract: deployed.address, firstBlock: deployed.block }
}

/** An existing network's new members funded (nothing to do when there are none). */
export async function fundMembers(rpc: string, L: Layout, fresh: MemberPlan[], log: (line: string) => void): Promise<void> {
  if (fresh.length === 0) return
  await fundAccounts(rpc, addressesOf(L, fresh), FUNDING_ETHER)
  log(fundedLine(fresh))
}

/** The recorded contract, checked to be on the chain; or, with none recorded, a new deployment. */
export async function ensureContract(rpc: string, recorded: ContractAt | undefined, L: Layout, log: (line: string) => void): Promise<ContractAt> {
  if (recorded) {
    const code = await rpcCall<string>(rpc, 'eth_getCode', [recorded.contract, 'latest'])
    if (!code || code === '0x') {
      throw new Error(`BatchPin contract ${recorded.contract} is not on the chain any more (${L.chainDir} lost its journal?); remove ${L.root} to start a new network`)
    }
    return recorded
  }
  const deployed = await deployBatchPin(rpc)
  log(`deployed BatchPin at ${deployed.address} (block ${deployed.block})`)
  return { contract: deployed.address, firstBlock: deployed.block }
}

/**
 * The contract the folder's existing members were configured with, when they agree on one: a folder whose first
 * start failed after its members were created has them but no network.json yet.
 */
function contractOfMembers(plans: MemberPlan[]): ContractAt | undefined {
  const chains = plans.flatMap((m) => (m.cfg ? [m.cfg.chain] : []))
  const first = chains[0]
  if (first === undefined || !chains.every((c) => c.contract.toLowerCase() === first.contract.toLowerCase())) return undefined
  return { contract: first.contract.toLowerCase(), firstBlock: Math.min(...chains.map((c) => c.firstBlock)) }
}
