import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { artifactsComplete } from '../../../network/contracts.mjs'

describe('contract artifacts', () => {
  it('counts a source compiled only when each contract it declares has its artifact, not its folder alone', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-contracts-'))
    try {
      const sources = join(dir, 'contracts')
      const artifacts = join(dir, 'artifacts')
      mkdirSync(sources)
      writeFileSync(join(sources, 'Pins.sol'), 'pragma solidity ^0.8.0;\ncontract Firefly {}\nabstract contract Base {}\n')
      expect(artifactsComplete(sources, artifacts)).to.equal(false)
      const out = join(artifacts, 'contracts', 'Pins.sol')
      mkdirSync(out, { recursive: true })
      writeFileSync(join(out, 'Firefly.dbg.json'), '{}')
      expect(artifactsComplete(sources, artifacts), 'only the debug file').to.equal(false)
      writeFileSync(join(out, 'Firefly.json'), '{}')
      expect(artifactsComplete(sources, artifacts), 'Base missing').to.equal(false)
      writeFileSync(join(out, 'Base.json'), '{}')
      expect(artifactsComplete(sources, artifacts)).to.equal(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
