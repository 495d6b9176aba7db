import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { httpCall } from '../node/core/http-call.js'

/**
 * How fast a process is assumed to replay its state at start-up, at worst: a member loads its snapshot and replays
 * its journal, the chain replays every block it mined. Measured replays run several times faster on this kind of
 * machine (a 3.65 GB member database took ~60 s); the margin is for a loaded machine.
 */
export const REPLAY_BYTES_PER_SECOND = 16 * 1024 * 1024

/**
 * How long to wait for a process to become ready: the base wait, plus the time its state could take to replay. A
 * fixed wait fails a large member that is only busy loading, and a wait scaled to the data still catches a hung one.
 */
export function readyTimeoutMs(baseMs: number, stateDirs: readonly string[]): number {
  const bytes = stateDirs.reduce((sum, dir) => sum + bytesUnder(dir), 0)
  return baseMs + Math.ceil((bytes / REPLAY_BYTES_PER_SECOND) * 1000)
}

/** Bytes of the regular files under `dir` (recursively); 0 for a folder that does not exist yet. */
export function bytesUnder(dir: string): number {
  let total = 0
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return 0
  }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) total += bytesUnder(p)
    else if (e.isFile()) {
      try {
        total += statSync(p).size
      } catch {
        // Removed since it was listed (a checkpoint swapping files): it holds nothing to replay.
      }
    }
  }
  return total
}

/**
 * Whether the member whose API is `api` lists every one of `members`' orgs and nodes as registered. A member
 * registers its node after its org, so the node list is the one still short while a start waits: the org list is
 * asked for only once that one is complete. Until the member holds as many nodes as there are members, each poll
 * asks for one node only, the last one it would need: a full list carries every certificate, and answering it read
 * every identity's row, over and over as a start waits.
 */
export async function seesEveryMember(api: string, members: readonly { did: string; node: string }[]): Promise<boolean> {
  const get = async (path: string): Promise<{ did: string }[]> => JSON.parse((await httpCall(`${api}/api/v1/network/${path}`, { timeoutMs: 5000 })).body) as { did: string }[]
  if (members.length > 1 && (await get(`nodes?limit=1&skip=${members.length - 1}`)).length === 0) return false
  const list = async (k: 'organizations' | 'nodes'): Promise<Set<string>> => new Set((await get(`${k}?limit=1000`)).map((i) => i.did))
  const nodes = await list('nodes')
  if (!members.every((o) => nodes.has(`did:firefly:node/${o.node}`))) return false
  const orgs = await list('organizations')
  return members.every((o) => orgs.has(o.did))
}
