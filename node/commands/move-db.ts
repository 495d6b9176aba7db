/**
 * `npm run node -- move-db --config <member config.json> --to postgres --url <database URL>` (or `--to sqljs`): moves
 * one stopped member's state between engines outside any local network (a member on a host of its own). The
 * database it moves to must exist and be empty; see docs/operations.md.
 */
import { parseArgs } from 'node:util'
import { ConfigError } from '../config.js'
import { CopyRefused } from '../db/move/copy.js'
import { engineLabel, moveMemberDatabase } from './move-member.js'

const USAGE = 'usage: npm run node -- move-db --config <member config.json> --to postgres --url postgres://user:password@host:port/dbname\n' +
  '       npm run node -- move-db --config <member config.json> --to sqljs\n'

/** Runs the command with `argv` (after `move-db`); answers the exit code: 0 moved, 1 refused or failed, 2 usage. */
export async function moveDbCommand(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let values
  try {
    values = parseArgs({ args: argv, options: { config: { type: 'string' }, to: { type: 'string' }, url: { type: 'string' } }, strict: true }).values
  } catch (e) {
    err(`${(e as Error).message}\n${USAGE}`)
    return 2
  }
  const to = values.to
  if (values.config === undefined || (to !== 'postgres' && to !== 'sqljs') || (to === 'sqljs') !== (values.url === undefined)) {
    err(USAGE)
    return 2
  }
  try {
    const r = await moveMemberDatabase({ configFile: values.config, to, ...(values.url !== undefined ? { url: values.url } : {}), log: out })
    out(`moved from ${engineLabel(r.from)} to ${engineLabel(r.to)}: ${r.tables.length} tables, ${r.tables.reduce((n, t) => n + t.rows, 0)} rows, each checked; ${values.config} names the new one`)
    out(`the previous state is kept, untouched, at ${r.kept}: remove it once you no longer need it`)
    return 0
  } catch (e) {
    if (e instanceof CopyRefused || e instanceof ConfigError) {
      err(`move-db: ${e.message}`)
      return 1
    }
    throw e
  }
}
