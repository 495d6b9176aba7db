import { expect } from 'chai'
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { adminTokenPath, bearerMatches, ensureAdminToken, readToken } from '../../../../node/admin/token.js'

describe('admin token', () => {
  const root = mkdtempSync(join(tmpdir(), 'parley-token-'))
  after(() => rmSync(root, { recursive: true, force: true }))

  it('is made on first start in the data folder, readable by the member\'s user only, and kept across starts', () => {
    const dataDir = join(root, 'first', 'data')
    const token = ensureAdminToken(dataDir)
    expect(token).to.match(/^[0-9a-f]{64}$/)
    expect(statSync(adminTokenPath(dataDir)).mode & 0o777).to.equal(0o600)
    expect(readFileSync(adminTokenPath(dataDir), 'utf8').trim()).to.equal(token)
    expect(ensureAdminToken(dataDir), 'a restart keeps it').to.equal(token)
  })

  it('keeps an operator\'s own token, tightening its mode, and replaces one too short to be a secret', () => {
    const own = join(root, 'own')
    const file = adminTokenPath(own)
    ensureAdminToken(own)
    writeFileSync(file, 'Operator-Chosen-Secret-0123456789-abcdef\n')
    chmodSync(file, 0o644)
    expect(ensureAdminToken(own)).to.equal('Operator-Chosen-Secret-0123456789-abcdef')
    expect(statSync(file).mode & 0o777).to.equal(0o600)
    writeFileSync(file, 'short\n')
    expect(readToken(file)).to.equal(undefined)
    expect(ensureAdminToken(own)).to.match(/^[0-9a-f]{64}$/)
  })

  it('matches only the bearer token itself', () => {
    const token = 'a'.repeat(64)
    expect(bearerMatches(`Bearer ${token}`, token)).to.equal(true)
    expect(bearerMatches(`bearer ${token}`, token)).to.equal(true)
    for (const h of [undefined, '', token, `Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Basic ${token}`, `Bearer ${token} extra`]) expect(bearerMatches(h, token), String(h)).to.equal(false)
  })
})
