import { extend } from '../core/extend.js'
import type { Hash, MessageId } from '../core/ids.js'

export interface ManifestEntry {
  id: MessageId
  hash: Hash
  topics: number
  /** Index of this message's first context in the batch's on-chain contexts array. */
  firstPin: number
}

/**
 * The batch manifest, indexed so that an on-chain context index maps to its message and topic in O(log n):
 * contexts are laid out message by message, topic by topic.
 */
export class IndexedManifest {
  readonly entries: ManifestEntry[]

  /** From the manifest's JSON text, or from the messages it lists in order (a batch just read: no text to parse). */
  constructor(manifest: string | readonly { id: MessageId; hash: Hash; topics: number }[]) {
    const messages = typeof manifest === 'string' ? (JSON.parse(manifest) as { messages: { id: MessageId; hash: Hash; topics: number }[] }).messages : manifest
    let next = 0
    this.entries = messages.map((e) => {
      const entry = extend(e, { firstPin: next })
      next += e.topics
      return entry
    })
  }

  /** The message and topic position of context `index`, or undefined when the batch has fewer contexts. */
  at(index: number): { entry: ManifestEntry; topic: number } | undefined {
    let lo = 0
    let hi = this.entries.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const e = this.entries[mid]!
      if (index < e.firstPin) hi = mid - 1
      else if (index >= e.firstPin + e.topics) lo = mid + 1
      else return { entry: e, topic: index - e.firstPin }
    }
    return undefined
  }
}
