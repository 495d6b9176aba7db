import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../../../node/config.js'
import { ControlError, NetworkControls } from '../../../network/controls.js'
import type { NetworkDescription } from '../../../network/description.js'
import { layout } from '../../../network/layout.js'
import { moveMemberEngine } from '../../../network/move-db.js'
import { isAlive } from '../../../network/process.js'
import { IdleProcesses } from '../../support/idle-process.js'
import { writeMemberConfig } from '../../support/member-config.js'
import { scriptedEndpoint } from '../../support/scripted-server.js'

/** move-db's refusals: what it refuses before touching the member, and how a failed move leaves it. */
describe('network/move-db: moving a member between engines, refused', () => {
  const idle = new IdleProcesses()
  let dir: string
  let node1: number
  let logged: string[]

  const description: NetworkDescription = {
    chain: { rpc: 'http://127.0.0.1:1', chainId: 1337, contract: '0x' + '11'.repeat(20), firstBlock: 0 },
    ipfs: { api: 'http://127.0.0.1:2', gateway: 'http://127.0.0.1:3' },
    members: [{ org: 'org1', node: 'node1', did: 'did:firefly:org/org1', api: 'http://127.0.0.1:4', ws: 'ws://127.0.0.1:4/ws', p2p: 'https://127.0.0.1:5', key: '0x1' }],
  }

  function writeMember(): void {
    const M = layout(dir).member('org1')
    mkdirSync(M.dir, { recursive: true })
    writeMemberConfig(M.dir)
  }

  async function refusal(p: Promise<unknown>): Promise<Error> {
    try {
      await p
    } catch (err) {
      return err as Error
    }
    return expect.fail('the move was not refused')
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'move-db-'))
    writeFileSync(join(dir, 'network.json'), JSON.stringify(description))
    node1 = idle.start()
    writeFileSync(join(dir, 'pids.json'), JSON.stringify({ processes: [{ name: 'node1', pid: node1 }] }))
    logged = []
  })

  afterEach(async () => {
    await idle.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  const move = (opts: Parameters<typeof moveMemberEngine>[2]) => moveMemberEngine(new NetworkControls(dir), 'org1', { ...opts, log: (l) => logged.push(l) })

  it('refuses a database URL that is no URL, not PostgreSQL\'s, or given for sql.js, and leaves the member running', async () => {
    const cases: [Parameters<typeof moveMemberEngine>[2], string][] = [
      [{ to: 'postgres', databaseUrl: 'not a url' }, '--database-url must be a URL like postgres://user:password@host:port/[dbname] (got "not a url")'],
      [{ to: 'postgres', databaseUrl: 'mysql://u:p@127.0.0.1:3306/' }, '--database-url must start with postgres:// (got mysql://)'],
      [{ to: 'sqljs', databaseUrl: 'postgres://u:p@127.0.0.1:5432/' }, '--database-url is for --to postgres'],
    ]
    for (const [opts, message] of cases) {
      const err = await refusal(move(opts))
      expect(err).to.be.instanceOf(ControlError)
      expect(err.message).to.equal(message)
    }
    expect(isAlive(node1)).to.equal(true)
    expect(logged).to.deep.equal([])
  })

  it('asks for a server when the network has no PostgreSQL of its own', async () => {
    const err = await refusal(move({ to: 'postgres' }))
    expect(err).to.be.instanceOf(ControlError)
    expect(err.message).to.match(/^the network in .* runs no PostgreSQL server: give one with --database-url postgres:\/\/user:password@host:port\/ \(or start a network on PostgreSQL: npm run network:up -- --database postgres\)$/)
    expect(isAlive(node1)).to.equal(true)
  })

  it('names a PostgreSQL server that cannot be reached, before stopping the member', async () => {
    const closed = await scriptedEndpoint()
    await closed.close()
    const port = new URL(closed.url).port
    const err = await refusal(move({ to: 'postgres', databaseUrl: `postgres://parley:pw@127.0.0.1:${port}/member_db` }))
    expect(err).to.be.instanceOf(ControlError)
    expect(err.message).to.match(/ECONNREFUSED|connect/)
    expect(isAlive(node1)).to.equal(true)
  })

  it('stops the member, and on a refused copy says so, tries to start it again and passes the refusal on', async () => {
    writeMember()
    const err = await refusal(move({ to: 'sqljs' }))
    expect(err).to.be.instanceOf(ControlError)
    expect(err.message).to.match(/^org1 is already on sql\.js \(.*config\.json\)$/)
    expect(isAlive(node1)).to.equal(false)
    expect(logged[0]).to.equal(`stopping org1 (pid ${node1})`)
    expect(logged[1]).to.equal('org1: the move failed; starting it again on its old state')
    // Nothing else of the network runs here, so the restart is refused in turn.
    expect(logged[2]).to.match(/^org1 did not start again: the network in .* is not running/)
  })

  it('passes on an error that is not a refusal of the copy as it is', async () => {
    const err = await refusal(move({ to: 'sqljs' }))
    expect(err).to.be.instanceOf(ConfigError)
    expect(err).not.to.be.instanceOf(ControlError)
    expect(logged).to.include('org1: the move failed; starting it again on its old state')
  })
})
