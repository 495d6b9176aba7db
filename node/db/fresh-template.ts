import { randomBytes } from 'node:crypto'
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { writeFileAtomic } from '../core/atomic-file.js'
import { JOURNAL_FILE, SEALED_JOURNAL_FILE, SNAPSHOT_FILE, SNAPSHOT_TMP_FILE } from './journal-file.js'

/**
 * A new database can start from a template: the snapshot a new database had once every migration was applied, and
 * nothing else. Applying the migrations to a new database cost a member ~0.25 s of CPU at its first start (SQLite
 * parsing and running the schema's statements, most of it compiling SQLite's functions that only DDL runs), when a
 * whole network's members start at once on a machine's few cores; loading the template copies a few hundred KiB.
 *
 * The template belongs to one set of migrations: the network keeps it in its build (`.build/<id>/`, whose id covers
 * the migrations' source), and the first member of a build to migrate a new database writes it. A database seeded
 * from it is the same as a migrated one (its `schema_migrations` rows say when the template was made), and
 * `applyMigrations` then checks it like any other.
 */

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1')

/** Whether the folder holds no database yet: no snapshot and no journal. */
export async function isNewDatabase(dir: string): Promise<boolean> {
  for (const f of [SNAPSHOT_FILE, JOURNAL_FILE, SEALED_JOURNAL_FILE]) {
    try {
      await access(join(dir, f))
      return false
    } catch {
      // Not there: go on looking.
    }
  }
  return true
}

/**
 * Installs the template as the folder's snapshot, durably, when there is one that looks like a SQLite file;
 * answers whether it did.
 */
export async function seedFromTemplate(dir: string, template: string): Promise<boolean> {
  let bytes: Buffer
  try {
    bytes = await readFile(template)
  } catch {
    return false
  }
  if (bytes.length < 512 || !bytes.subarray(0, SQLITE_HEADER.length).equals(SQLITE_HEADER)) return false
  await writeFileAtomic(join(dir, SNAPSHOT_FILE), bytes, { tmp: join(dir, SNAPSHOT_TMP_FILE) })
  return true
}

/** Undoes seedFromTemplate, and removes the template, after the seeded database could not be opened. */
export async function dropSeed(dir: string, template: string): Promise<void> {
  await rm(join(dir, SNAPSHOT_FILE), { force: true })
  await rm(template, { force: true })
}

/**
 * Writes the template, whole under a temporary name and then renamed, so that members starting together each write
 * theirs and a reader sees one complete file or none. No fsync: a template lost to a power cut is made again.
 */
export async function saveTemplate(template: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${template}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await mkdir(dirname(template), { recursive: true })
    await writeFile(tmp, bytes)
    await rename(tmp, template)
  } catch {
    // A read-only or full disk: the next new database migrates, as this one did.
    await rm(tmp, { force: true }).catch(() => undefined)
  }
}
