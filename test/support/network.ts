import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork, stopNetwork, type RunningNetwork, type StartNetworkOptions } from '../../network/network.js'
import { readPids } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { isAlive } from '../../network/process.js'

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `parley-${prefix}-`))
}

/**
 * Starts a network for a test suite through the same code the CLI uses, and stops it by PID afterwards even
 * when a test failed; `stop()` also reports any process left alive so the suite can fail on it.
 */
export async function testNetwork(prefix: string, opts: Omit<StartNetworkOptions, 'dir'> = {}) {
  const dir = tempDir(prefix)
  let net: RunningNetwork | undefined
  try {
    net = await startNetwork({ dir, members: 3, ...opts })
  } catch (err) {
    await stopNetwork(dir)
    throw err
  }
  return {
    dir,
    net,
    /** Stops everything and answers the PIDs that were still alive afterwards (should be none). */
    async stop(keepDir = false): Promise<number[]> {
      const pids = readPids(layout(dir).pidsJson).processes.map((p) => p.pid)
      const all = [...new Set([...pids, ...(net?.processes.map((p) => p.pid) ?? [])])]
      await net?.stop()
      await stopNetwork(dir)
      const alive = all.filter(isAlive)
      if (!keepDir) rmSync(dir, { recursive: true, force: true })
      return alive
    },
  }
}

export async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url)
  return { status: res.status, body: (await res.json()) as T }
}
