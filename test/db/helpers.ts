import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Migration } from '../../node/db/database.js'

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
