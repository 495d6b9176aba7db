import type { Hash } from '../core/ids.js'

/**
 * The waiting pins of each on-chain context, in chain order, held in memory so that "is an earlier pin of this
 * context still waiting?" (asked for every message the aggregator looks at) costs no database read.
 *
 * Pins are stored in chain order with increasing sequences, so each context's queue only ever grows at its end. A
 * pin usually leaves from the head (nothing on a context overtakes), but can leave from the middle (a message
 * already settled through another batch), so leaving is recorded and the head skips what has left.
 *
 * Only broadcast (unmasked) pins belong here: a private pin is unique to its message, ordered by its nonce, and holds
 * nothing back, and on a member outside its group it would wait (and stay here) forever.
 */
export class ContextQueues<K extends string = Hash> {
  private readonly queues = new Map<K, { seqs: number[]; head: number }>()
  private readonly left = new Set<number>()
  /** The highest sequence seen: anything at or below it is already queued (or has left). */
  private newest = 0

  /** Starts again from the database's waiting pins (in chain order). */
  reset(waiting: readonly { seq: number; hash: K }[]): void {
    this.queues.clear()
    this.left.clear()
    this.newest = 0
    for (const p of waiting) this.add(p.seq, p.hash)
  }

  /** A waiting pin read from the database; pins seen before (a rewind reads them again) are ignored. */
  add(seq: number, hash: K): void {
    if (seq <= this.newest) return
    this.newest = seq
    const q = this.queues.get(hash)
    if (q) q.seqs.push(seq)
    else this.queues.set(hash, { seqs: [seq], head: 0 })
  }

  /** The pin no longer waits (its message was confirmed or rejected). */
  leave(seq: number, hash: K): void {
    const q = this.queues.get(hash)
    // A pin never queued (not read yet: its message settled through an earlier pin of its batch) is never read now.
    if (!q || seq > this.newest) return
    this.left.add(seq)
    this.advance(hash, q)
  }

  /** How many pins wait here (counted on demand: for tests and diagnostics). */
  get size(): number {
    let n = 0
    for (const q of this.queues.values()) for (let i = q.head; i < q.seqs.length; i++) if (!this.left.has(q.seqs[i]!)) n++
    return n
  }

  /** Whether a pin of `hash` earlier than `seq` still waits. */
  earlierWaiting(hash: K, seq: number): boolean {
    const q = this.queues.get(hash)
    return q !== undefined && q.head < q.seqs.length && q.seqs[q.head]! < seq
  }

  /** The sequence of the first pin of `hash` still waiting, if any (what holds later pins of the context back). */
  first(hash: K): number | undefined {
    const q = this.queues.get(hash)
    return q !== undefined && q.head < q.seqs.length ? q.seqs[q.head] : undefined
  }

  private advance(hash: K, q: { seqs: number[]; head: number }): void {
    while (q.head < q.seqs.length && this.left.has(q.seqs[q.head]!)) this.left.delete(q.seqs[q.head++]!)
    if (q.head === q.seqs.length) this.queues.delete(hash)
    // Drop the consumed prefix now and then, so a long-lived context does not keep every sequence it ever had.
    else if (q.head > 1024 && q.head * 2 > q.seqs.length) {
      q.seqs = q.seqs.slice(q.head)
      q.head = 0
    }
  }
}
