import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fsyncDir, fsyncDirSync, writeFileAtomic, writeFileAtomicSync, type AtomicWriteOptions } from '../../../../node/core/atomic-file.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { rejectionOf } from '../../../support/wait.js'

type Write = (path: string, data: string | Uint8Array, opts?: AtomicWriteOptions) => Promise<void>

const variants: { name: string; write: Write }[] = [
  { name: 'writeFileAtomic', write: writeFileAtomic },
  // Wrapped so both variants run through one suite; a sync throw becomes a rejection here.
  { name: 'writeFileAtomicSync', write: async (path, data, opts) => writeFileAtomicSync(path, data, opts) },
]


describe('atomic file writes', () => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  for (const { name, write } of variants) {
    describe(name, () => {
      it('writes a new file that reads back the same, as a string (UTF-8) or bytes', async () => {
        const dir = await temp.make('parley-atomic-')
        await write(join(dir, 'a.json'), '{"greeting":"héllo ✓"}\n')
        expect(readFileSync(join(dir, 'a.json'), 'utf8')).to.equal('{"greeting":"héllo ✓"}\n')

        const bytes = randomBytes(3 * 1024 * 1024 + 17)
        await write(join(dir, 'b.bin'), bytes)
        expect(readFileSync(join(dir, 'b.bin')).equals(bytes)).to.equal(true)

        await write(join(dir, 'empty'), new Uint8Array(0))
        expect(readFileSync(join(dir, 'empty')).length).to.equal(0)
      })

      it('replaces an existing file, also with shorter contents, and leaves no temporary file', async () => {
        const dir = await temp.make('parley-atomic-')
        const file = join(dir, 'state.json')
        writeFileSync(file, 'old contents that are longer than the new ones\n')
        await write(file, 'new\n')
        expect(readFileSync(file, 'utf8')).to.equal('new\n')
        expect(readdirSync(dir)).to.deep.equal(['state.json'])
      })

      it('uses the given temporary file name and does not leave it behind', async () => {
        const dir = await temp.make('parley-atomic-')
        const file = join(dir, 'snapshot.sqlite')
        await write(file, 'one', { tmp: join(dir, 'snapshot.tmp') })
        await write(file, 'two', { tmp: join(dir, 'snapshot.tmp') })
        expect(readFileSync(file, 'utf8')).to.equal('two')
        expect(readdirSync(dir)).to.deep.equal(['snapshot.sqlite'])
      })

      it('refuses a temporary file in another directory, since the rename and the directory fsync need one folder', async () => {
        const dir = await temp.make('parley-atomic-')
        const other = await temp.make('parley-atomic-')
        const file = join(dir, 'a')
        writeFileSync(file, 'old')
        const err = await rejectionOf<NodeJS.ErrnoException>(write(file, 'new', { tmp: join(other, 'a.tmp') }))
        expect(err.message).to.match(/same directory/)
        expect(readFileSync(file, 'utf8')).to.equal('old')
        expect(readdirSync(other)).to.deep.equal([])
      })

      it('honours mode, exactly and also when replacing a file that had other permissions', async function () {
        const dir = await temp.make('parley-atomic-')
        const file = join(dir, 'identity.json')
        await write(file, 'secret', { mode: 0o600 })
        expect(statSync(file).mode & 0o777).to.equal(0o600)

        writeFileSync(file, 'old')
        chmodSync(file, 0o644)
        await write(file, 'secret 2', { mode: 0o640 })
        expect(statSync(file).mode & 0o777).to.equal(0o640)
        expect(readFileSync(file, 'utf8')).to.equal('secret 2')
        expect(readdirSync(dir)).to.deep.equal(['identity.json'])
      })

      it('fails when the target directory is missing, creating nothing', async () => {
        const dir = await temp.make('parley-atomic-')
        const err = await rejectionOf<NodeJS.ErrnoException>(write(join(dir, 'missing', 'a.json'), 'x'))
        expect(err.code).to.equal('ENOENT')
        expect(readdirSync(dir)).to.deep.equal([])
      })

      it('fails when the temporary file cannot be created, leaving the old target untouched', async () => {
        const dir = await temp.make('parley-atomic-')
        const file = join(dir, 'network.json')
        writeFileSync(file, 'old contents\n')
        // A directory where the temporary file should go: opening it for writing fails.
        mkdirSync(`${file}.tmp`)
        const err = await rejectionOf<NodeJS.ErrnoException>(write(file, 'new contents\n'))
        expect(err.code).to.be.oneOf(['EISDIR', 'EPERM', 'EACCES'])
        expect(readFileSync(file, 'utf8')).to.equal('old contents\n')
        // What was there and not ours is left alone.
        expect(statSync(`${file}.tmp`).isDirectory()).to.equal(true)
      })

      it('fails when the rename cannot replace the target, removing its temporary file', async () => {
        const dir = await temp.make('parley-atomic-')
        const target = join(dir, 'state')
        // A non-empty directory cannot be replaced by a file.
        mkdirSync(join(target, 'inside'), { recursive: true })
        const err = await rejectionOf<NodeJS.ErrnoException>(write(target, 'new'))
        expect(err.code).to.be.oneOf(['EISDIR', 'ENOTEMPTY', 'EEXIST'])
        expect(readdirSync(dir)).to.deep.equal(['state'])
        expect(readdirSync(target)).to.deep.equal(['inside'])
      })

      it('refuses a temporary file that is the target itself', async () => {
        const dir = await temp.make('parley-atomic-')
        const file = join(dir, 'a')
        writeFileSync(file, 'old')
        const err = await rejectionOf<NodeJS.ErrnoException>(write(file, 'new', { tmp: file }))
        expect(err.message).to.equal(`the temporary file must not be ${file} itself`)
        expect(readFileSync(file, 'utf8')).to.equal('old')
      })
    })
  }

  it('writeFileAtomicSync throws synchronously when it fails', async () => {
    const dir = await temp.make('parley-atomic-')
    expect(() => writeFileAtomicSync(join(dir, 'missing', 'a'), 'x')).to.throw(/ENOENT/)
  })

  it('fsyncDir and fsyncDirSync sync an existing directory and fail on a missing one', async () => {
    const dir = await temp.make('parley-atomic-')
    await fsyncDir(dir)
    fsyncDirSync(dir)
    const err = await rejectionOf<NodeJS.ErrnoException>(fsyncDir(join(dir, 'missing')))
    expect(err.code).to.equal('ENOENT')
    expect(() => fsyncDirSync(join(dir, 'missing'))).to.throw(/ENOENT/)
  })
})
