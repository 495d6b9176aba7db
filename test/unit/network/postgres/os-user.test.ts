import { expect } from 'chai'
import { chmodSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { letAccountReach } from '../../../../network/postgres/os-user.js'
import { tempDir } from '../../../support/network.js'

describe('network/postgres/os-user: the account PostgreSQL runs as reaches the state folder', function () {
  // An account that owns nothing here, as the postgres account owns nothing of the user's.
  const stranger = { uid: 54_321, gid: 54_321 }
  let top: string
  beforeEach(function () {
    top = tempDir('os-user')
    chmodSync(top, 0o755)
  })
  afterEach(function () {
    rmSync(top, { recursive: true, force: true })
  })

  it('makes a state folder made 0700 crossable by others (o+x, not readable), and says so', function () {
    const root = join(top, 'net')
    mkdirSync(root, { mode: 0o700 })
    const lines: string[] = []
    letAccountReach(join(root, 'postgres', 'data'), root, stranger, (l) => lines.push(l))
    expect(statSync(root).mode & 0o777).to.equal(0o701)
    expect(lines).to.deep.equal([`made ${root} crossable by the postgres account (o+x), which PostgreSQL runs as`])
  })

  it("leaves a folder above the state folder as it is, and names it in the refusal", function () {
    const closed = join(top, 'closed')
    const root = join(closed, 'net')
    mkdirSync(root, { recursive: true })
    chmodSync(closed, 0o700)
    expect(() => letAccountReach(join(root, 'postgres', 'data'), root, stranger, () => undefined)).to.throw(`${closed} is not crossable by it. Allow it (chmod o+x ${closed})`)
    expect(statSync(closed).mode & 0o777).to.equal(0o700)
  })

  it('changes nothing when PostgreSQL runs as this process\'s own account', function () {
    const root = join(top, 'net')
    mkdirSync(root, { mode: 0o700 })
    letAccountReach(join(root, 'postgres', 'data'), root, undefined, () => undefined)
    expect(statSync(root).mode & 0o777).to.equal(0o700)
  })
})
