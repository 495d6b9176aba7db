import { expect } from 'chai'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Database, type Migration } from '../../node/db/database.js'
import { TempDirs, logCollector } from '../support/db/helpers.js'

const migrations: Migration[] = [
  { version: 1, name: 'items', up: 'CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)' },
  { version: 2, name: 'items by name', up: 'CREATE INDEX items_name ON items (name)' },
]

const schemaOf = (db: Database): unknown => db.all("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
const versionsOf = (db: Database): unknown => db.all('SELECT version, name, checksum FROM schema_migrations ORDER BY version')

describe('database: a new database started from a template', function () {
  const dirs = new TempDirs()
  after(() => dirs.cleanup())

  it('the first new database migrates and writes the template; the next starts from it, the same database', async () => {
    const template = join(await dirs.make(), 'new.sqlite')
    const first = await Database.open({ dir: await dirs.make(), migrations, template })
    expect(existsSync(template), 'written once migrated').to.equal(true)
    const seededDir = await dirs.make()
    const seeded = await Database.open({ dir: seededDir, migrations, template })
    try {
      expect(schemaOf(seeded)).to.deep.equal(schemaOf(first))
      expect(versionsOf(seeded)).to.deep.equal(versionsOf(first))
      // It is a database of its own: written, journaled and opened again like any other.
      await seeded.transaction((tx) => tx.run('INSERT INTO items (name) VALUES (?)', ['a']))
    } finally {
      await first.close()
      await seeded.close()
    }
    const reopened = await Database.open({ dir: seededDir, migrations, template })
    try {
      expect(reopened.all('SELECT name FROM items')).to.deep.equal([{ name: 'a' }])
    } finally {
      await reopened.close()
    }
  })

  it('an existing database ignores the template', async () => {
    const template = join(await dirs.make(), 'new.sqlite')
    const dir = await dirs.make()
    const db = await Database.open({ dir, migrations })
    await db.transaction((tx) => tx.run('INSERT INTO items (name) VALUES (?)', ['kept']))
    await db.close()
    const again = await Database.open({ dir, migrations, template })
    try {
      expect(again.all('SELECT name FROM items')).to.deep.equal([{ name: 'kept' }])
      expect(existsSync(template), 'no template from a database that was not new').to.equal(false)
    } finally {
      await again.close()
    }
  })

  it('a template that does not open is removed, and the new database migrates instead', async () => {
    const template = join(await dirs.make(), 'new.sqlite')
    const first = await Database.open({ dir: await dirs.make(), migrations, template })
    await first.close()
    const bytes = readFileSync(template)
    bytes.fill(0xee, 100)
    writeFileSync(template, bytes)
    const { lines, log } = logCollector()
    const db = await Database.open({ dir: await dirs.make(), migrations, template, log })
    try {
      expect(versionsOf(db)).to.have.length(2)
      expect(lines.some((l) => l.includes('could not be opened') && l.includes('migrating instead'))).to.equal(true)
      expect(readFileSync(template).equals(bytes), 'replaced by a good one').to.equal(false)
    } finally {
      await db.close()
    }
  })
})
