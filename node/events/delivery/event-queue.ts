import type { EnrichedEvent } from '../../model/index.js'

/** Events in sequence order, taken from the front in O(1). */
export class EventQueue {
  private items: EnrichedEvent[] = []
  private head = 0

  static merged(a: EnrichedEvent[], b: EnrichedEvent[]): EventQueue {
    const q = new EventQueue()
    q.items = [...a, ...b].sort((x, y) => x.event.sequence - y.event.sequence)
    return q
  }

  get length(): number {
    return this.items.length - this.head
  }

  push1(e: EnrichedEvent): void {
    this.items.push(e)
  }

  push(list: readonly EnrichedEvent[]): void {
    for (const e of list) this.items.push(e)
  }

  take(n: number): EnrichedEvent[] {
    const end = Math.min(this.items.length, this.head + n)
    const out = this.items.slice(this.head, end)
    this.head = end
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    }
    return out
  }

  /** Everything queued, emptying it. */
  drain(): EnrichedEvent[] {
    return this.take(this.length)
  }
}
