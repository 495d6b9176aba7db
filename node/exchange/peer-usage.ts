import { ParleyError } from '../core/errors.js'

export interface InFlightLimits {
  /** Requests one org may have in flight at once, over all its nodes (`quotas.inFlightRequestsPerOrg`). */
  requestsPerOrg: number
  /** Bytes of batch bodies one org may have held at once, over all its nodes (`quotas.inFlightBatchBytesPerOrg`). */
  batchBytesPerOrg: number
}

interface OrgUsage {
  requests: number
  bytes: number
}

/** One admitted request: what it holds of its org's share, given back once by `release`. */
export interface InFlightTicket {
  /** Holds `bytes` more of the org's batch bytes; throws TOO_MANY_REQUESTS (naming the quota) past its share. */
  take(bytes: number): void
  /** The refusal `take(bytes)` would throw now, if any (checked from a declared length before the body is asked for). */
  refusal(bytes: number): ParleyError | undefined
  release(): void
}

/**
 * What each peer org has in flight at this endpoint: requests, and bytes of batch bodies (read into memory before they
 * are parsed). Counted per org, not per certificate: an org may register any number of nodes, and together they get
 * one share. Bytes are held as they arrive, not from a declared length, so a body that trickles holds only what came.
 */
export class PeerUsage {
  private readonly byOrg = new Map<string, OrgUsage>()

  constructor(private readonly limits: InFlightLimits) {}

  /** A ticket for a new request of `org` (sent by `node`), or the refusal's text when the org has its share in flight. */
  admit(org: string, node: string): InFlightTicket | string {
    const usage = this.byOrg.get(org) ?? { requests: 0, bytes: 0 }
    const max = this.limits.requestsPerOrg
    if (usage.requests >= max) {
      return `TOO_MANY_REQUESTS: org ${org} already has ${usage.requests} requests in flight here over all its nodes (this one from ${node}), at most ${max} (quotas.inFlightRequestsPerOrg)`
    }
    usage.requests++
    this.byOrg.set(org, usage)
    let held = 0
    let released = false
    const refusal = (bytes: number): ParleyError | undefined =>
      usage.bytes + bytes > this.limits.batchBytesPerOrg
        ? new ParleyError('TOO_MANY_REQUESTS', `org ${org} already has ${usage.bytes} bytes of batches in flight here over all its nodes; ${bytes} more would pass ${this.limits.batchBytesPerOrg} (quotas.inFlightBatchBytesPerOrg)`)
        : undefined
    return {
      refusal,
      take: (bytes) => {
        if (released) return
        const over = refusal(bytes)
        if (over) throw over
        usage.bytes += bytes
        held += bytes
      },
      release: () => {
        if (released) return
        released = true
        usage.requests--
        usage.bytes -= held
        if (usage.requests === 0) this.byOrg.delete(org)
      },
    }
  }

  /** What `org` has in flight now (for tests and status). */
  of(org: string): Readonly<OrgUsage> {
    return this.byOrg.get(org) ?? { requests: 0, bytes: 0 }
  }
}
