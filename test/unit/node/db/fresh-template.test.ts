import { expect } from 'chai'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isNewDatabase, saveTemplate, seedFromTemplate } from '../../../../node/db/fresh-template.js'
import { SEALED_JOURNAL_FILE, SNAPSHOT_FILE } from '../../../../node/db/journal-file.js'
import { TempDirs } from '../../../support/db/helpers.js'

/**
 * The schema template a new sql.js database starts from, at the module: which folders count as new, which files are
 * taken as a template (a SQLite file, nothing else), and a template that cannot be written costing nothing but time.
 */
describe('db: the fresh-database template', () => {
  const temp = new TempDirs()
  after(() => temp.cleanup())
  const sqlite = (size: number) => Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(size - 16, 1)])

  it('counts a folder as new until it holds a snapshot or either journal', async () => {
    const dir = await temp.make('parley-template-new-')
    expect(await isNewDatabase(dir)).to.equal(true)
    await writeFile(join(dir, SEALED_JOURNAL_FILE), '')
    expect(await isNewDatabase(dir)).to.equal(false)
  })

  it('seeds only from a file that looks like a SQLite database, writing nothing otherwise', async () => {
    const dir = await temp.make('parley-template-seed-')
    const dir2 = await temp.make('parley-template-source-')
    expect(await seedFromTemplate(dir, join(dir2, 'absent.sqlite'))).to.equal(false)
    for (const [name, bytes] of [['short', sqlite(511)], ['foreign', Buffer.alloc(4096, 7)]] as const) {
      await writeFile(join(dir2, name), bytes)
      expect(await seedFromTemplate(dir, join(dir2, name)), name).to.equal(false)
    }
    expect(await readdir(dir)).to.deep.equal([])
    const good = sqlite(4096)
    await writeFile(join(dir2, 'good'), good)
    expect(await seedFromTemplate(dir, join(dir2, 'good'))).to.equal(true)
    expect((await readFile(join(dir, SNAPSHOT_FILE))).equals(good)).to.equal(true)
  })

  it('writes a template whole, and gives up quietly where it cannot be written, leaving nothing behind', async () => {
    const dir = await temp.make('parley-template-save-')
    await saveTemplate(join(dir, 'sub', 'node-schema.sqlite'), sqlite(1024))
    expect(await readdir(join(dir, 'sub'))).to.deep.equal(['node-schema.sqlite'])
    // Its folder would have to be made where a file is.
    await writeFile(join(dir, 'file'), 'x')
    await saveTemplate(join(dir, 'file', 'node-schema.sqlite'), sqlite(1024))
    expect((await readdir(dir)).sort()).to.deep.equal(['file', 'sub'])
  })
})
