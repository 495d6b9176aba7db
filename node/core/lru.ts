/**
 * A map whose entries weigh at most `capacity` in all (each weighs 1 unless `weigh` says otherwise), dropping the
 * least recently used first: a Map keeps insertion order, so a hit moves its entry to the end and the first entry
 * is the one to drop.
 */
export class LruMap<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>()
  private total = 0

  constructor(
    readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get size(): number {
    return this.map.size
  }

  /** What the entries held weigh together. */
  get weight(): number {
    return this.total
  }

  get(key: K): V | undefined {
    const e = this.map.get(key)
    if (e === undefined) return undefined
    this.map.delete(key)
    this.map.set(key, e)
    return e.value
  }

  set(key: K, value: V): void {
    this.delete(key)
    const weight = this.weigh(value)
    // An entry heavier than the whole map would only empty it.
    if (weight > this.capacity) return
    this.map.set(key, { value, weight })
    this.total += weight
    while (this.total > this.capacity) this.delete(this.map.keys().next().value as K)
  }

  delete(key: K): void {
    const e = this.map.get(key)
    if (e === undefined) return
    this.map.delete(key)
    this.total -= e.weight
  }

  clear(): void {
    this.map.clear()
    this.total = 0
  }
}
