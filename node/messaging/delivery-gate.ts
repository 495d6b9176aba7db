import type { BatchId, MessageId } from '../core/ids.js'

/**
 * Which private deliveries from this member to another org's node(s) a rule names: all of them (`to` alone), those of
 * one batch, or those of the batch holding one message. `batch` is filled in for a message's rule once its batch is
 * known (from the database when the rule is made, or when the batch is queued).
 */
export type DeliveryRule = {
  /** The receiving org's name. */
  to: string
  message?: MessageId
  batch?: BatchId
}

/** What the gate says of one delivery: go ahead, wait for a release, or never go while this member runs. */
export type DeliveryVerdict = 'open' | 'held' | 'dropped'

/**
 * The exchange controls of the admin routes, in memory only: deliveries held (they wait, until released) and
 * deliveries dropped (discarded, never sent while the member runs). The delivery queue asks `verdict` before each
 * attempt and each blob, and asks again for what it queued or parked whenever the rules change (`onChange`), so a
 * release sends at once. Nothing here touches the database: a dropped delivery's row stays pending, so a restart of
 * the member, which forgets every rule, sends it again as a recovered sender would.
 *
 * A drop wins over a hold; a hold of all deliveries to an org holds every batch to it, whatever else is released.
 */
export class DeliveryGate {
  private holds: DeliveryRule[] = []
  private drops: DeliveryRule[] = []
  /** `to|batch` of every drop that names its batch: a verdict is one lookup however many batches were dropped. */
  private readonly droppedKeys = new Set<string>()
  private readonly listeners = new Set<() => void>()

  verdict(batch: BatchId, org: string): DeliveryVerdict {
    if (this.droppedKeys.has(dropKey(org, batch))) return 'dropped'
    if (this.holds.some((r) => r.to === org && (r.batch === batch || (r.batch === undefined && r.message === undefined)))) return 'held'
    return 'open'
  }

  /** Holds what the rule names (the same rule twice is one hold). */
  hold(rule: DeliveryRule): void {
    if (this.holds.some((r) => sameRule(r, rule))) return
    this.holds.push({ ...rule })
    this.changed()
  }

  /**
   * Releases the holds the rule names: `to` alone, every hold to that org; a batch, the holds of that batch (by batch
   * or by a message in it); a message, the holds of that message and of its batch. A hold of all deliveries to the org
   * stays unless `to` alone is released. What is no longer held goes out at once.
   */
  release(rule: DeliveryRule): void {
    const before = this.holds.length
    this.holds = this.holds.filter((r) => !(r.to === rule.to && releases(rule, r)))
    if (this.holds.length !== before) this.changed()
  }

  /**
   * Drops what a rule of one batch (by `batch`, or by `message` until its batch is known) names: its deliveries to that
   * org, queued now or later, are never sent while the member runs.
   */
  drop(...rules: (DeliveryRule & ({ batch: BatchId } | { message: MessageId }))[]): void {
    let added = false
    for (const rule of rules) {
      if (this.drops.some((r) => sameRule(r, rule))) continue
      this.drops.push({ ...rule })
      if (rule.batch !== undefined) this.droppedKeys.add(dropKey(rule.to, rule.batch))
      added = true
    }
    // One wake for a whole backlog dropped at once: each wake re-checks every queued delivery.
    if (added) this.changed()
  }

  /** A batch is queued carrying these messages: rules made by one of them before it was sealed now name the batch. */
  bind(batch: BatchId, messages: readonly MessageId[]): void {
    if (![...this.holds, ...this.drops].some((r) => r.batch === undefined && r.message !== undefined)) return
    const ids = new Set<string>(messages)
    for (const r of [...this.holds, ...this.drops]) if (r.batch === undefined && r.message !== undefined && ids.has(r.message)) r.batch = batch
    for (const r of this.drops) if (r.batch === batch) this.droppedKeys.add(dropKey(r.to, batch))
  }

  /** The rules in force, oldest first. */
  view(): { held: DeliveryRule[]; dropped: DeliveryRule[] } {
    return { held: this.holds.map(copy), dropped: this.drops.map(copy) }
  }

  /** Called after every new hold or drop and every release that freed something: whoever queues deliveries asks again. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }

  private changed(): void {
    for (const l of this.listeners) l()
  }
}

/** Two rules name the same deliveries: same org and form (a message's rule is known by its message). */
function sameRule(a: DeliveryRule, b: DeliveryRule): boolean {
  if (a.to !== b.to) return false
  if (a.message !== undefined || b.message !== undefined) return a.message === b.message
  return a.batch === b.batch
}

function releases(release: DeliveryRule, held: DeliveryRule): boolean {
  if (release.message === undefined && release.batch === undefined) return true
  if (release.message !== undefined && held.message === release.message) return true
  return release.batch !== undefined && held.batch === release.batch
}

const copy = (r: DeliveryRule): DeliveryRule => ({ to: r.to, ...(r.message ? { message: r.message } : {}), ...(r.batch ? { batch: r.batch } : {}) })

function dropKey(org: string, batch: BatchId): string {
  return `${org}|${batch}`
}
