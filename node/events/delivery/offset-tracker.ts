/**
 * Where a subscription may resume: the highest sequence up to which every event has been acknowledged or passed
 * over by its filter (FireFly's `handleAckOffsetUpdate`: an ack moves the offset only when it settles the lowest
 * event in flight). Events are registered in sequence order as they are read; acknowledgements come in any order.
 * Every operation is O(1) amortised, whatever the number in flight.
 */
export class OffsetTracker {
  /** Registered and not yet passed by the offset, in sequence order; `settled` marks acks that arrived out of order. */
  private readonly open: { seq: number; settled: boolean }[] = []
  private head = 0
  private readonly bySeq = new Map<number, { seq: number; settled: boolean }>()
  private current: number

  constructor(offset: number) {
    this.current = offset
  }

  /** The highest sequence at and below which everything is settled. */
  get offset(): number {
    return this.current
  }

  /** Events registered for delivery and not yet acknowledged (handed out or waiting to be). */
  get unsettled(): number {
    return this.bySeq.size
  }

  /** An event that will be delivered: the offset cannot pass it until `settle(seq)`. */
  deliver(seq: number): void {
    this.checkOrder(seq)
    const entry = { seq, settled: false }
    this.open.push(entry)
    this.bySeq.set(seq, entry)
  }

  /** An event that needs no acknowledgement (filtered out): settled as soon as everything before it is. */
  pass(seq: number): boolean {
    this.checkOrder(seq)
    if (this.head === this.open.length) {
      this.current = seq
      return true
    }
    // A run of settled entries behind an open one collapses into its last: a subscription whose one unacknowledged
    // event holds the offset back costs one entry, however many filtered-out events stream past it.
    const last = this.open[this.open.length - 1]!
    if (last.settled) last.seq = seq
    else this.open.push({ seq, settled: true })
    return false
  }

  /** Acknowledges a delivered event; true when the offset moved. Unknown or repeated sequences change nothing. */
  settle(seq: number): boolean {
    const entry = this.bySeq.get(seq)
    if (!entry) return false
    this.bySeq.delete(seq)
    entry.settled = true
    const before = this.current
    while (this.head < this.open.length && this.open[this.head]!.settled) this.current = this.open[this.head++]!.seq
    if (this.head === this.open.length) {
      this.open.length = 0
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.open.length) {
      this.open.splice(0, this.head)
      this.head = 0
    }
    return this.current !== before
  }

  private checkOrder(seq: number): void {
    const last = this.head < this.open.length ? this.open[this.open.length - 1]!.seq : this.current
    if (seq <= last) throw new Error(`offset tracker: sequence ${seq} registered after ${last}; events must come in sequence order`)
  }
}
