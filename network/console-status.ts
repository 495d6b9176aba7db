import type { NetworkDescription } from './description.js'
import { networkCommand } from './command-line.js'

/** The table of URLs printed once the network is ready. */
export function formatTable(d: NetworkDescription): string {
  const rows = [
    ['member', 'API', 'API page (OpenAPI)', 'console', 'events', 'p2p', 'key'],
    ...d.members.map((m) => [`${m.org}/${m.node}`, m.api, m.apiPage ?? `${m.api}/api`, m.ui ?? `${m.api}/ui/`, m.ws, m.p2p, m.key]),
  ]
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  const line = (r: string[]) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()
  return [
    `chain  ${d.chain.rpc}  (chainId ${d.chain.chainId}, BatchPin ${d.chain.contract}, first block ${d.chain.firstBlock})`,
    `ipfs   API ${d.ipfs.api}  gateway ${d.ipfs.gateway}`,
    ...(d.database?.engine === 'postgres' ? [`db     PostgreSQL ${d.database.server}${d.database.managed ? ` (data in the state folder's postgres/)` : ''}, a database per member`] : []),
    '',
    line(rows[0]!),
    ...rows.slice(1).map(line),
  ].join('\n')
}

interface MemberStatus {
  chain?: { connected?: boolean; lastProcessedBlock?: number; headBlock?: number }
  ipfs?: { connected?: boolean }
}

/**
 * A compact live status, one line per member, refreshed every two seconds: redrawn in place on a terminal,
 * printed only when it changes otherwise (so a log file does not fill up).
 */
export class LiveStatus {
  private timer: NodeJS.Timeout | undefined
  private lastText = ''
  private drawnLines = 0

  constructor(
    private readonly d: NetworkDescription,
    private readonly out: NodeJS.WriteStream,
    /** Whether a member's process is paused (network -- pause): shown as such rather than as not answering. */
    private readonly paused: (org: string) => boolean = () => false,
  ) {}

  start(): void {
    this.out.write('\nlive status (Ctrl-C stops the network):\n')
    const tick = async (): Promise<void> => {
      await this.render()
      this.timer = setTimeout(() => void tick(), 2000)
    }
    void tick()
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer)
  }

  private async render(): Promise<void> {
    const lines = await Promise.all(
      this.d.members.map(async (m) => {
        if (this.paused(m.org)) return `  ${m.org.padEnd(8)} PAUSED (${networkCommand('resume')} ${m.org})`
        try {
          const res = await fetch(`${m.api}/api/v1/status`, { signal: AbortSignal.timeout(1500) })
          const s = (await res.json()) as MemberStatus
          const chain = s.chain?.connected ? `chain ok, block ${s.chain.lastProcessedBlock ?? '?'}/${s.chain.headBlock ?? '?'}` : 'chain DOWN'
          const ipfs = s.ipfs?.connected ? 'ipfs ok' : 'ipfs DOWN'
          return `  ${m.org.padEnd(8)} up    ${chain}, ${ipfs}`
        } catch {
          return `  ${m.org.padEnd(8)} DOWN  (no answer from ${m.api})`
        }
      }),
    )
    const text = lines.join('\n')
    if (this.out.isTTY) {
      if (this.drawnLines > 0) this.out.write(`\x1b[${this.drawnLines}F\x1b[J`)
      this.out.write(`${text}\n`)
      this.drawnLines = lines.length
    } else if (text !== this.lastText) {
      this.out.write(`${new Date().toISOString()}\n${text}\n`)
    }
    this.lastText = text
  }
}
