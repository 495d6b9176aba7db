import { expect } from 'chai'
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { layout, type Layout } from '../../../../network/layout.js'
import {
  describeDatabase,
  memberDatabaseConfig,
  memberDatabaseUrl,
  planDatabase,
  readDatabaseRecord,
  writeDatabaseRecord,
  type DatabaseRecord,
} from '../../../../network/startup/database.js'
import { tempDir } from '../../../support/network.js'

describe('network/startup/database: which engine a folder runs its members on', function () {
  let L: Layout
  const port = async (): Promise<number> => 40_123
  /** A folder whose network has a member (its config is what makes the member exist). */
  const withMember = (): void => {
    mkdirSync(L.member('org0').dir, { recursive: true })
    writeFileSync(L.member('org0').config, '{}\n')
  }
  const plan = async (opts: Parameters<typeof planDatabase>[1], hasMembers = false): Promise<DatabaseRecord> => planDatabase(L, opts, hasMembers, port)

  beforeEach(function () {
    L = layout(tempDir('db-plan'))
  })
  afterEach(function () {
    rmSync(L.root, { recursive: true, force: true })
  })

  it('is sql.js for a new network unless told, with nothing in the member config', async function () {
    const r = await plan({})
    expect(r).to.deep.equal({ engine: 'sqljs' })
    expect(memberDatabaseConfig(r, 'org0')).to.equal(undefined)
    expect(describeDatabase(r)).to.deep.equal({ engine: 'sqljs' })
  })

  it('gives a new managed server a free port, a random password and plain database names; network.json gets no password', async function () {
    const r = await plan({ database: 'postgres' })
    if (r.engine !== 'postgres' || !r.managed) throw new Error(`not a managed server: ${JSON.stringify(r)}`)
    expect(r).to.include({ port: 40_123, user: 'parley', prefix: 'parley_' })
    expect(r.password).to.match(/^[A-Za-z0-9_-]{24}$/)
    expect(memberDatabaseConfig(r, 'org1')).to.deep.equal({ type: 'postgres', url: `postgres://parley:${r.password}@127.0.0.1:40123/parley_org1` })
    expect(describeDatabase(r)).to.deep.equal({ engine: 'postgres', managed: true, server: 'postgres://parley@127.0.0.1:40123/' })
    const another = await plan({ database: 'postgres' })
    expect(another.engine === 'postgres' && another.managed && another.password).to.not.equal(r.password)
  })

  it("reads a member's whole database URL back from its config, for a test or script to connect with", async function () {
    const r = await plan({ database: 'postgres' })
    mkdirSync(L.member('org0').dir, { recursive: true })
    writeFileSync(L.member('org0').config, JSON.stringify({ org: 'org0', database: memberDatabaseConfig(r, 'org0') }))
    expect(memberDatabaseUrl(L, 'org0')).to.equal(memberDatabaseConfig(r, 'org0')!.url)
    writeFileSync(L.member('org0').config, JSON.stringify({ org: 'org0' }))
    expect(memberDatabaseUrl(L, 'org0')).to.equal(undefined)
  })

  it("names a shared server's databases after the folder with a random tag, so that two networks never share one", async function () {
    const a = await plan({ databaseUrl: 'postgres://me:secret@db.example:6543/ignored?sslmode=disable' })
    const b = await plan({ databaseUrl: 'postgres://me:secret@db.example:6543/' })
    if (a.engine !== 'postgres' || a.managed || b.engine !== 'postgres' || b.managed) throw new Error('not shared servers')
    // The database the URL names is not the members' (each gets its own); its connection options are kept.
    expect(a.url).to.equal('postgres://me:secret@db.example:6543/?sslmode=disable')
    expect(a.prefix).to.match(/^parley_parley_db_plan_[a-z0-9_]*_[0-9a-f]{6}_$/)
    expect(a.prefix).to.not.equal(b.prefix)
    expect(memberDatabaseConfig(a, 'org0')?.url).to.equal(`postgres://me:secret@db.example:6543/${a.prefix}org0?sslmode=disable`)
    expect(describeDatabase(b)).to.deep.equal({ engine: 'postgres', managed: false, server: 'postgres://me@db.example:6543/' })
  })

  it('refuses flags that contradict each other or a URL that is not PostgreSQL', async function () {
    await plan({ database: 'sqljs', databaseUrl: 'postgres://h/' }).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.match(/--database-url .* not with sqljs/))
    await plan({ databaseUrl: 'mysql://h/' }).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.include('must start with postgres://'))
    await plan({ databaseUrl: 'not a url' }).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.include('--database-url must be a URL'))
    await plan({ database: 'mysql' as 'sqljs' }).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.include('--database must be sqljs or postgres'))
  })

  it('keeps the recorded engine of a folder with members, and refuses a flag that contradicts it', async function () {
    const r = await plan({ database: 'postgres' })
    writeDatabaseRecord(L, r)
    withMember()
    expect(statSync(L.databaseJson).mode & 0o777).to.equal(0o600)
    expect(await plan({}, true)).to.deep.equal(r)
    expect(await plan({ database: 'postgres' }, true)).to.deep.equal(r)
    await plan({ database: 'sqljs' }, true).then(
      () => expect.fail('accepted'),
      (e: Error) => expect(e.message).to.equal(
        `the network in ${L.root} keeps its members' state in PostgreSQL (its own server, under ${L.postgres.dir}); --database sqljs contradicts it, and nothing was started. ` +
          'Resume it without the flag, or start a new network in another folder (--dir)',
      ),
    )
    await plan({ databaseUrl: 'postgres://u:p@elsewhere:5432/' }, true).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.include('--database-url postgres://u@elsewhere:5432/ contradicts it'))
  })

  it('takes a folder with members and no record for sql.js, as every network was before the choice', async function () {
    withMember()
    expect(await plan({}, true)).to.deep.equal({ engine: 'sqljs' })
    await plan({ database: 'postgres' }, true).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.include("keeps its members' state in sql.js; --database postgres contradicts it"))
  })

  it('lets a folder without members change its mind: the cluster of a failed first start is kept only while still wanted', async function () {
    const r = await plan({ database: 'postgres' })
    writeDatabaseRecord(L, r)
    mkdirSync(L.postgres.data, { recursive: true })
    expect(await plan({})).to.deep.equal(r)
    expect(existsSync(L.postgres.data)).to.equal(true)
    expect(await plan({ database: 'sqljs' })).to.deep.equal({ engine: 'sqljs' })
    expect(existsSync(L.postgres.dir)).to.equal(false)
    expect(readDatabaseRecord(L)).to.deep.equal(r)
  })
})
