/**
 * Adds `delta` to `key`'s count, dropping the key once its count is 0 or less: a map of open connections or held
 * bytes by address keeps only the addresses that hold some, so that it does not grow with every client ever seen.
 */
export function addCount<K>(counts: Map<K, number>, key: K, delta: number): void {
  const n = (counts.get(key) ?? 0) + delta
  if (n > 0) counts.set(key, n)
  else counts.delete(key)
}
