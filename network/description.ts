import { readFileSync, existsSync } from 'node:fs'
import { writeFileAtomicSync } from '../node/core/atomic-file.js'

/** `<dir>/network.json`: the one description that tests, scripts and users read (its shape is in the README). */
export interface NetworkDescription {
  chain: { rpc: string; chainId: number; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  members: MemberDescription[]
}

export interface MemberDescription {
  org: string
  node: string
  did: string
  api: string
  /** Events over WebSockets: `ws://host:port/ws` (the namespace comes with each start or as `?namespace=`). */
  ws: string
  /**
   * The web console (`http://host:port/ui`). Written only once the node serves it; today's nodes do not, so
   * network.json leaves it out rather than list a URL that answers 404.
   */
  ui?: string
  p2p: string
  /** The member's signing address (lowercase), as FireFly calls an org's key. */
  key: string
}

export function readDescription(file: string): NetworkDescription | undefined {
  if (!existsSync(file)) return undefined
  return JSON.parse(readFileSync(file, 'utf8')) as NetworkDescription
}

/** Writes `value` as JSON so that a crash leaves the old file or the new one, never half of one, and durably. */
export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomicSync(file, JSON.stringify(value, null, 2) + '\n')
}

/** Which processes a network started, so that `network:down` (or a test) can stop them by PID. */
export interface PidFile {
  orchestrator?: number
  processes: { name: string; pid: number }[]
}

export function readPids(file: string): PidFile {
  if (!existsSync(file)) return { processes: [] }
  return JSON.parse(readFileSync(file, 'utf8')) as PidFile
}
