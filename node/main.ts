import { existsSync, writeSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadNodeConfig, ConfigError } from './config.js'
import { startNode } from './node.js'
import { collectWhenIdle, processDeps } from './core/idle-gc.js'
import { loadMallocTrim, mallocTrimBesideEntry } from './core/malloc-trim.js'

/** Entry point of a member node process: `node --import tsx node/main.ts --config <file>`. */

/** Log lines that could not be written since the last one that could, and why. */
let dropped = 0
let dropReason = ''

/**
 * The member's log, on stdout (which the network points at a file). Written straight to the descriptor, never
 * through process.stdout: that stream turns a failed write (ENOSPC once the log's disk is full) into an 'error'
 * event which, with nobody listening, kills the process; that is how a full disk took members down. Here a line
 * that cannot be written is dropped, and how many were is said as soon as a line can be written again.
 */
function log(line: string): void {
  try {
    if (dropped > 0) {
      writeLine(`log: ${dropped} line(s) could not be written (${dropReason})`)
      dropped = 0
    }
    writeLine(line)
  } catch (err) {
    dropped++
    dropReason = err instanceof Error ? err.message : String(err)
  }
}

function writeLine(line: string): void {
  const bytes = Buffer.from(`${new Date().toISOString()} ${line}\n`)
  for (let off = 0; off < bytes.length; ) off += writeSync(1, bytes, off)
}

/**
 * The console a build wrote beside this program (`.build/<id>/ui/` next to `.build/<id>/node.js`); none when run from
 * the sources under tsx, where /ui then answers 503 saying how to build it.
 */
function consoleNextToEntry(): string | undefined {
  const entry = process.argv[1]
  if (entry === undefined) return undefined
  const dir = join(dirname(resolve(entry)), 'ui')
  return existsSync(join(dir, 'index.html')) ? dir : undefined
}

/** The build's malloc_trim, said once when a build has none (run from the sources, a node never has). */
function mallocTrim(): (() => void) | undefined {
  const file = mallocTrimBesideEntry()
  if (file === undefined) return undefined
  const loaded = loadMallocTrim(file)
  if ('trim' in loaded) return loaded.trim
  log(`memory: malloc's free pages stay with this process once idle: ${loaded.unavailable}`)
  return undefined
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { config: { type: 'string' }, 'ui-dir': { type: 'string' }, 'db-template': { type: 'string' } }, strict: true })
  if (!values.config) {
    process.stderr.write('usage: node --import tsx node/main.ts --config <member config.json> [--ui-dir <built console>] [--db-template <file>]\n')
    process.exit(2)
  }
  const cfg = { ...loadNodeConfig(values.config) }
  const uiDir = values['ui-dir'] !== undefined ? resolve(values['ui-dir']) : (cfg.uiDir ?? consoleNextToEntry())
  if (uiDir !== undefined) cfg.uiDir = uiDir
  if (values['db-template'] !== undefined) cfg.dbTemplate = resolve(values['db-template'])
  const node = await startNode(cfg, log)
  const idleGc = collectWhenIdle(processDeps(mallocTrim()))
  let stopping = false
  const shutdown = (signal: string): void => {
    if (stopping) return
    stopping = true
    log(`${signal}: stopping`)
    idleGc.stop()
    node.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log(`stop failed: ${(err as Error).message}`)
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

// Last resort. Every background loop catches and retries its own failures, so a rejection that gets here is a bug:
// logged loudly, and the member goes on, since what it holds is in the database, where each transaction is atomic,
// and one lost task is recovered by the next start at worst. Dying would stop every member's work for one task.
process.on('unhandledRejection', (err: unknown) => log(`unhandled rejection: ${(err as Error)?.stack ?? String(err)}`))

/** `node/main.ts move-db ...`: moves a stopped member's state between engines (node/commands/move-db.ts) instead of running it. */
async function moveDb(): Promise<void> {
  const { moveDbCommand } = await import('./commands/move-db.js')
  process.exit(await moveDbCommand(process.argv.slice(3), (l) => process.stdout.write(`${l}\n`), (l) => process.stderr.write(`${l}\n`)))
}

;(process.argv[2] === 'move-db' ? moveDb() : main()).catch((err: unknown) => {
  const e = err as NodeJS.ErrnoException
  if (err instanceof ConfigError) log(err.message)
  else if (e.code === 'EADDRINUSE') log(`cannot listen: port ${(e as { port?: number }).port ?? ''} is already in use on 127.0.0.1`)
  else log(`fatal: ${e.stack ?? e.message}`)
  process.exit(1)
})
