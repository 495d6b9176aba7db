import { expect } from 'chai'
import { join } from 'node:path'
import { startApiServer, type ApiServer } from '../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../node/core/limits.js'
import type { NodeServices } from '../../node/services.js'
import { freePort } from '../../network/process.js'
import { TempDirs } from './db/helpers.js'
import { openRepos, type Repos } from './repos.js'

/** What an API unit suite's tests reach: the database behind the server, and the server's port. */
export interface ApiSuite {
  readonly repos: Repos
  readonly port: number
}

/**
 * Mocha hooks for the unit suite of some routes: before all, a real database in a temporary folder (`dir/db`), the
 * services `build` makes over it (the request limits added to their config), and the real API server over them on a
 * free loopback port; after all, everything closed and removed, and no server error logged meanwhile.
 */
export function apiSuite(prefix: string, build: (repos: Repos, dir: string) => Promise<object> | object): ApiSuite {
  const temp = new TempDirs()
  const logs: string[] = []
  let repos: Repos | undefined
  let api: ApiServer | undefined
  let port = 0
  before(async () => {
    const dir = await temp.make(prefix)
    repos = await openRepos(join(dir, 'db'))
    const services = (await build(repos, dir)) as { config?: object }
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services: { ...services, config: { limits: DEFAULT_REQUEST_LIMITS, ...services.config } } as unknown as NodeServices, log: (l) => logs.push(l) })
  })
  after(async () => {
    await api?.close()
    await repos?.db.close()
    await temp.cleanup()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })
  return {
    get repos() {
      if (!repos) throw new Error('the suite has not started')
      return repos
    },
    get port() {
      return port
    },
  }
}

