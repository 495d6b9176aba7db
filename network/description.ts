import { readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs'

/** `<dir>/network.json`: the one description that tests, scripts and users read (DESIGN section 5). */
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
  ws: string
  ui: string
  p2p: string
  /** The member's signing address (lowercase), as FireFly calls an org's key. */
  key: string
}

export function readDescription(file: string): NetworkDescription | undefined {
  if (!existsSync(file)) return undefined
  return JSON.parse(readFileSync(file, 'utf8')) as NetworkDescription
}

export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(value, null, 2) + '\n')
  renameSync(`${file}.tmp`, file)
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
