import { spawn } from 'node:child_process'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { projectRoot, signalPid } from '../../../network/process.js'
import { bundledArgs } from '../bundled-entry.js'
import { Database, type DatabaseOptions, type Migration } from '../../../node/db/database.js'

/** Temporary folders made by a test file; `cleanup` removes them in an after() hook. */
export class TempDirs {
  private readonly dirs: string[] = []

  async make(prefix = 'parley-db-'): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), prefix))
    this.dirs.push(dir)
    return dir
  }

  /**
   * A copy of a database folder as it is on disk right now: exactly what a process killed at this
   * instant would leave (everything acknowledged has been fsynced, so the copy must hold it).
   */
  async crashImage(dir: string): Promise<string> {
    const copy = await this.make('parley-crash-')
    await cp(dir, copy, { recursive: true })
    return copy
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.dirs.map((d) => rm(d, { recursive: true, force: true })))
  }
}

export const itemsMigration: Migration = {
  version: 1,
  name: 'items',
  up: `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, data BLOB);
       CREATE INDEX items_name ON items (name);`,
}

export function logCollector(): { lines: string[]; log: (line: string) => void } {
  const lines: string[] = []
  return { lines, log: (line) => lines.push(line) }
}

/**
 * The databases a test opens, closed after it: `open(dir, extra)` opens one over `migrations` (unless `extra` names
 * others) and keeps it; `closeAll()`, for afterEach, closes every one kept (one the test closed itself is no harm).
 */
export function openedDatabases(migrations: readonly Migration[] = [itemsMigration]) {
  const open: Database[] = []
  return {
    async open(dir: string, extra: Partial<DatabaseOptions> = {}): Promise<Database> {
      const db = await Database.open({ dir, migrations, ...extra })
      open.push(db)
      return db
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((db) => db.close().catch(() => {})))
    },
  }
}

/** A crash-test child while it runs, as its watcher sees it. */
export interface CrashChild {
  /** The ids it printed as acknowledged (`ack <id>`), in order; lines that arrive after the kill was sent still count. */
  readonly acked: readonly number[]
  /** Whether SIGKILL was sent. */
  readonly killed: boolean
  /** Sends SIGKILL (once). */
  kill(): void
}

/**
 * Crash-test children: real processes, killed with SIGKILL. `run` starts a fixture that prints `ack <id>` for each
 * acknowledged commit and `error …` if it fails, hands the watcher every other line of its output and, after each
 * piece of output, the chance to kill it; it resolves with the acknowledged ids once the child died of SIGKILL, and
 * fails if the child exits by itself, reports an error, or is not killed within 25 s (too little progress).
 * `killAll`, for after(), kills any left running.
 */
export class CrashChildren {
  private readonly pids = new Set<number>()

  async run(
    fixture: string,
    args: readonly string[],
    watch: { line?: (line: string, child: CrashChild) => void; output?: (child: CrashChild) => void },
  ): Promise<number[]> {
    const proc = spawn(process.execPath, await bundledArgs(fixture, args), { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
    const pid = proc.pid
    if (pid === undefined) throw new Error('could not start the crash-test child')
    this.pids.add(pid)
    const acked: number[] = []
    let killed = false
    const child: CrashChild = {
      acked,
      get killed() {
        return killed
      },
      kill() {
        if (killed) return
        killed = true
        signalPid(pid, 'SIGKILL')
      },
    }
    let stderr = ''
    let partial = ''
    return new Promise<number[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill()
        reject(new Error(`crash child made too little progress (${acked.length} acks); stderr: ${stderr}`))
      }, 25_000)
      proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
      proc.stdout?.on('data', (d: Buffer) => {
        const lines = (partial + d.toString()).split('\n')
        partial = lines.pop() ?? ''
        for (const line of lines) {
          if (line.startsWith('ack ')) acked.push(Number(line.slice(4)))
          else if (line.startsWith('error ')) reject(new Error(line))
          else watch.line?.(line, child)
        }
        watch.output?.(child)
      })
      proc.once('exit', (code, signal) => {
        clearTimeout(timer)
        this.pids.delete(pid)
        if (signal === 'SIGKILL') resolve(acked)
        else reject(new Error(`crash child exited by itself (code ${code}); stderr: ${stderr}`))
      })
    })
  }

  killAll(): void {
    for (const pid of this.pids) signalPid(pid, 'SIGKILL')
  }
}
