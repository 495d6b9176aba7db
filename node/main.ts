import { parseArgs } from 'node:util'
import { loadNodeConfig, ConfigError } from './config.js'
import { startNode } from './node.js'

/** Entry point of a member node process: `node --import tsx node/main.ts --config <file>`. */
function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`)
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { config: { type: 'string' } }, strict: true })
  if (!values.config) {
    process.stderr.write('usage: node --import tsx node/main.ts --config <member config.json>\n')
    process.exit(2)
  }
  const cfg = loadNodeConfig(values.config)
  const node = await startNode(cfg, log)
  let stopping = false
  const shutdown = (signal: string): void => {
    if (stopping) return
    stopping = true
    log(`${signal}: stopping`)
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

// A bug in one request or background task must not take the member down; it is logged and the node goes on.
process.on('unhandledRejection', (err: unknown) => log(`unhandled rejection: ${(err as Error)?.stack ?? String(err)}`))

main().catch((err: unknown) => {
  const e = err as NodeJS.ErrnoException
  if (err instanceof ConfigError) log(err.message)
  else if (e.code === 'EADDRINUSE') log(`cannot listen: port ${(e as { port?: number }).port ?? ''} is already in use on 127.0.0.1`)
  else log(`fatal: ${e.stack ?? e.message}`)
  process.exit(1)
})
