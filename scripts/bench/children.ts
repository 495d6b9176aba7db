/**
 * Processes the benchmark starts beside the network (the bare baseline server). They are listed in a file in the
 * network's folder so that the reaper can stop them too when the benchmark process dies without doing it.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeJsonAtomic } from '../../network/description.js'
import { stopPid } from '../../network/process.js'

export function childrenFile(dir: string): string {
  return join(dir, 'bench-children.json')
}

/** The PIDs listed for `dir`; none when the file is absent or unreadable (a reaper must still stop the network). */
export function readChildren(dir: string): number[] {
  try {
    const file = childrenFile(dir)
    if (!existsSync(file)) return []
    const v = JSON.parse(readFileSync(file, 'utf8')) as { pids?: unknown }
    return Array.isArray(v.pids) ? v.pids.filter((p): p is number => Number.isInteger(p) && p > 1) : []
  } catch {
    return []
  }
}

export class Children {
  private readonly pids = new Set<number>()

  constructor(private readonly dir: string) {}

  /** Call as soon as the process exists, before waiting for it to be ready, so an interrupted start is covered. */
  add(pid: number): void {
    this.pids.add(pid)
    this.save()
  }

  /** SIGTERM, then SIGKILL after the grace; safe to call from a scenario's finally and the shutdown at once. */
  async stop(pid: number): Promise<void> {
    await stopPid(pid)
    if (this.pids.delete(pid)) this.save()
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.pids].map((pid) => this.stop(pid)))
  }

  private save(): void {
    try {
      writeJsonAtomic(childrenFile(this.dir), { pids: [...this.pids] })
    } catch (err) {
      // Once the shutdown has removed the folder there is no reaper left to tell.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
}
