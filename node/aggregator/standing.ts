import type { Hash } from '../core/ids.js'
import { ContextQueues } from './context-queues.js'

/** What a waiting broadcast pin is to the queues: its place in the chain's order, its context and who signed it. */
export interface QueuedPin {
  seq: number
  hash: Hash
  signer: string
  /** Its BatchPin event: pins of one event are one transaction, none of them earlier than the others. */
  eventId: string
}

/**
 * A pin's standing at its place in the chain's order (DESIGN section 9), decided from the chain and the batches alone:
 * - `member`: its signer is the key of an identity whose claim was ordered (its first pin) before it;
 * - `undetermined`: not that, but its signer signed a broadcast pin in an earlier event, still undecided, which may be its own
 *   registration claim whose payload is late here and confirmed elsewhere: it holds like a member's until that is
 *   decided, then becomes one of the others;
 * - `stranger`: otherwise. It holds no topic but against identity claims (two claims of one name are ordered by the
 *   chain alone).
 */
export type Standing = 'member' | 'undetermined' | 'stranger'

/**
 * The waiting broadcast pins, by context and by standing, in memory: what the ordering checks ask for every message
 * ("does an earlier pin of this context hold?") at no database read. Members' and undetermined pins hold their
 * contexts (`holding`); strangers' are kept apart (`strangers`) and hold only identity claims back.
 *
 * Standing is per signer and cached: when a signer was registered (`registeredAt`, read once per signer through
 * `lookup`, then told by `registered` when a claim is confirmed), and its waiting pins in chain order. Only a pin
 * leaving (decided or refused) or a registration changes a standing, and then only of that signer's undetermined pins,
 * from the oldest: each costs O(1) per pin that changes.
 *
 * Masked (private) pins are never here: a member outside a group never decides them, so they must not make anyone's
 * later pins undetermined on some members and not on others.
 */
export class StandingQueues {
  private readonly holding = new ContextQueues()
  private readonly strangers = new SortedQueues()
  /** Every waiting pin by signer, whatever its standing: the first says whether a later one may be undetermined. */
  private readonly bySigner = new ContextQueues<string>()
  /** Each signer's undetermined pins, in chain order. */
  private readonly undetermined = new Map<string, QueuedPin[]>()
  /** The sequence of the first pin of each signer's registration claim; null: not registered. */
  private readonly registeredAt = new Map<string, number | null>()
  /** Each queued pin's standing and event, by sequence. */
  private readonly standings = new Map<number, { standing: Standing; eventId: string }>()
  private newest = 0

  /** `lookup`: where a signer's registration claim was ordered, read from the database (undefined: not registered). */
  constructor(private readonly lookup: (signer: string) => number | undefined) {}

  /** Starts again from the database's waiting broadcast pins (in chain order); registrations are read again. */
  reset(waiting: readonly QueuedPin[]): void {
    this.holding.reset([])
    this.strangers.clear()
    this.bySigner.reset([])
    this.undetermined.clear()
    this.registeredAt.clear()
    this.standings.clear()
    this.newest = 0
    for (const p of waiting) this.add(p)
  }

  /** A waiting pin read from the database; pins seen before (a rewind reads them again) are ignored. */
  add(p: QueuedPin): void {
    if (p.seq <= this.newest) return
    this.newest = p.seq
    this.bySigner.add(p.seq, p.signer)
    const standing = this.standingAt(p)
    this.standings.set(p.seq, { standing, eventId: p.eventId })
    if (standing === 'stranger') {
      this.strangers.insert(p.seq, p.hash)
      return
    }
    this.holding.add(p.seq, p.hash)
    if (standing === 'undetermined') {
      const list = this.undetermined.get(p.signer)
      if (list) list.push(p)
      else this.undetermined.set(p.signer, [p])
    }
  }

  /**
   * The pin no longer waits (its message was decided, or its payload refused). Answers whether that turned pins of
   * its signer from undetermined into strangers' (contexts they held are free now: what waited behind may go).
   */
  leave(p: QueuedPin): boolean {
    if (p.seq > this.newest) return false
    const standing = this.standings.get(p.seq)?.standing
    if (standing === undefined) return false
    this.standings.delete(p.seq)
    if (standing === 'stranger') this.strangers.remove(p.seq, p.hash)
    else this.holding.leave(p.seq, p.hash)
    this.bySigner.leave(p.seq, p.signer)
    if (standing === 'undetermined') {
      const list = this.undetermined.get(p.signer)
      const at = list ? indexOfSeq(list, p.seq) : -1
      if (at >= 0) list!.splice(at, 1)
      if (list?.length === 0) this.undetermined.delete(p.signer)
    }
    return this.settle(p.signer)
  }

  /**
   * `signer`'s registration claim, whose first pin is `claimSeq`, was confirmed: its later pins are members'. Its
   * earlier ones stay what they are (they were signed before it was registered).
   */
  registered(signer: string, claimSeq: number): void {
    this.registeredAt.set(signer, claimSeq)
    const list = this.undetermined.get(signer)
    if (!list) return
    const keep = list.filter((u) => u.seq <= claimSeq)
    for (const u of list) if (u.seq > claimSeq) this.standings.set(u.seq, { standing: 'member', eventId: u.eventId })
    if (keep.length > 0) this.undetermined.set(signer, keep)
    else this.undetermined.delete(signer)
  }

  /**
   * Whether a pin of `hash` earlier than `seq` still holds it. `identityClaim`: asked for an identity claim, which
   * strangers' pins (other claims, maybe of the same name) hold back too.
   */
  earlierWaiting(hash: Hash, seq: number, identityClaim = false): boolean {
    return this.holding.earlierWaiting(hash, seq) || (identityClaim && this.strangers.earlierWaiting(hash, seq))
  }

  /** The sequence of the first pin that holds `hash` (what a trace names as blocking). */
  first(hash: Hash, identityClaim = false): number | undefined {
    const held = this.holding.first(hash)
    const stranger = identityClaim ? this.strangers.first(hash) : undefined
    if (held === undefined) return stranger
    return stranger === undefined ? held : Math.min(held, stranger)
  }

  /** A waiting pin's standing as it stands now (a trace), or undefined when it is not queued. */
  standingOf(seq: number): Standing | undefined {
    return this.standings.get(seq)?.standing
  }

  /** How many pins wait here, of any standing (counted on demand: for tests and diagnostics). */
  get size(): number {
    return this.standings.size
  }

  private standingAt(p: QueuedPin): Standing {
    const registered = this.registration(p.signer)
    if (registered !== undefined && registered < p.seq) return 'member'
    return this.earlierEvent(p.signer, p) ? 'undetermined' : 'stranger'
  }

  /**
   * Whether `signer` has a waiting pin in an event before `p`'s. Its first waiting pin tells: pins of one event have
   * consecutive sequences, so when the first is of `p`'s event, every waiting pin of the signer before `p` is.
   */
  private earlierEvent(signer: string, p: { seq: number; eventId: string }): boolean {
    const first = this.bySigner.first(signer)
    return first !== undefined && first < p.seq && this.standings.get(first)?.eventId !== p.eventId
  }

  private registration(signer: string): number | undefined {
    let r = this.registeredAt.get(signer)
    if (r === undefined) {
      r = this.lookup(signer) ?? null
      this.registeredAt.set(signer, r)
    }
    return r ?? undefined
  }

  /** The signer's undetermined pins with no earlier waiting pin of its own left are strangers' now, from the oldest. */
  private settle(signer: string): boolean {
    const list = this.undetermined.get(signer)
    if (!list) return false
    let freed = 0
    while (freed < list.length && !this.earlierEvent(signer, list[freed]!)) {
      const u = list[freed++]!
      this.holding.leave(u.seq, u.hash)
      this.strangers.insert(u.seq, u.hash)
      this.standings.set(u.seq, { standing: 'stranger', eventId: u.eventId })
    }
    if (freed === list.length) this.undetermined.delete(signer)
    else if (freed > 0) list.splice(0, freed)
    return freed > 0
  }
}

/** Where the pin of sequence `seq` is in `list` (in chain order), or -1. */
function indexOfSeq(list: readonly { seq: number }[], seq: number): number {
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (list[mid]!.seq < seq) lo = mid + 1
    else hi = mid
  }
  return list[lo]?.seq === seq ? lo : -1
}

/**
 * Strangers' waiting pins by context, each list in chain order. A pin may join out of order (an undetermined pin
 * turning into a stranger's), so lists are kept sorted; they are short (strangers' pins of one context).
 */
class SortedQueues {
  private readonly lists = new Map<Hash, number[]>()

  clear(): void {
    this.lists.clear()
  }

  insert(seq: number, hash: Hash): void {
    const list = this.lists.get(hash)
    if (!list) {
      this.lists.set(hash, [seq])
      return
    }
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (list[mid]! < seq) lo = mid + 1
      else hi = mid
    }
    if (list[lo] !== seq) list.splice(lo, 0, seq)
  }

  remove(seq: number, hash: Hash): void {
    const list = this.lists.get(hash)
    if (!list) return
    const at = list.indexOf(seq)
    if (at >= 0) list.splice(at, 1)
    if (list.length === 0) this.lists.delete(hash)
  }

  earlierWaiting(hash: Hash, seq: number): boolean {
    const list = this.lists.get(hash)
    return list !== undefined && list[0]! < seq
  }

  first(hash: Hash): number | undefined {
    return this.lists.get(hash)?.[0]
  }
}
