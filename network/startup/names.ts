import { Transaction } from 'ethers'
import { ChainJournal } from '../chain/journal.js'
import { batchPinInterface } from '../../node/chain/abi.js'
import { broadcastContext, identityTopic } from '../../node/core/hashes.js'
import { nodeDid, orgDid } from '../../node/model/index.js'

/** A name a new member would claim, found pinned on chain already. */
export interface ClaimedName {
  name: string
  did: string
  /** The account that pinned it: not the new member's, whose key does not exist yet. */
  by: string
  block: number | 'pending'
  tx: string
}

/**
 * The org and node names of new members that the chain in `chainDir` already holds a pin for, read from its journal
 * before anything starts. A claim is pinned on its DID's topic, and the first one pinned wins (every member orders
 * claims by the chain alone), so a name pinned by anyone else (a member, or any funded account: Hardhat's are
 * unlocked) can never be the new member's: its claim would be refused, or wait forever behind a pin whose payload
 * never comes, and private sends to that name would go to whoever holds it. Any pin on the topic counts, whatever its
 * payload, since which of them is a real claim is known only to the members.
 */
export function claimedNames(chainDir: string, contract: string, members: readonly { org: string; node: string }[]): ClaimedName[] {
  const wanted = new Map<string, { name: string; did: string }>()
  for (const m of members) {
    for (const [name, did] of [[m.org, orgDid(m.org)], [m.node, nodeDid(m.node)]] as const) wanted.set(broadcastContext(identityTopic(did)), { name, did })
  }
  const { blocks, pending } = new ChainJournal(chainDir).read()
  const found = new Map<string, ClaimedName>()
  const look = (raw: string, block: number | 'pending'): void => {
    // Most transactions name none of the contexts: a text search skips them before any decoding.
    const hex = raw.toLowerCase()
    const hits = [...wanted.keys()].filter((c) => hex.includes(c))
    if (hits.length === 0) return
    const tx = Transaction.from(raw)
    if (tx.to?.toLowerCase() !== contract.toLowerCase()) return
    const call = batchPinInterface.parseTransaction({ data: tx.data })
    if (call?.name !== 'pinBatch') return
    const contexts = (call.args[3] as string[]).map((c) => c.toLowerCase().replace(/^0x/, ''))
    for (const c of hits) {
      const w = wanted.get(c)!
      if (contexts.includes(c) && !found.has(w.did)) found.set(w.did, { ...w, by: (tx.from ?? '').toLowerCase(), block, tx: tx.hash ?? '' })
    }
  }
  for (const b of blocks) for (const raw of b.txs) look(raw, b.n)
  for (const raw of pending) look(raw, 'pending')
  return [...found.values()]
}

/** The refusal a start prints: which names, who holds them, and what to do instead. */
export function claimedNamesError(claimed: readonly ClaimedName[]): Error {
  const lines = claimed.map((c) => `${c.did} is already pinned on chain by ${c.by} (${c.block === 'pending' ? 'a pending transaction' : `block ${c.block}`}, tx ${c.tx}), a key the new member does not hold`)
  return new Error(`cannot grow the network: ${lines.join('; ')}. Nothing was started. A name is claimed once, by the first pin on its topic: start a new network folder, or keep the network at its size`)
}
