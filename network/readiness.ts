import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

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
