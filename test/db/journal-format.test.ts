import { expect } from 'chai'
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Database, DatabaseError, type Migration, type SqlValue } from '../../node/db/database.js'
import { frameHeader, MAX_FRAME_BODY_BYTES, RecordBuilder, StatementNames, type TxOps } from '../../node/db/journal-record.js'
import { TempDirs, itemsMigration, logCollector, openedDatabases } from '../support/db/helpers.js'
import { journalRecords, occurrences } from '../support/db/journal.js'

/** The accept path's two inserts (a data item, then its message), with SQL shaped like the repositories'. */
const acceptMigration: Migration = {
  version: 2,
  name: 'accept',
  up: `CREATE TABLE data (id TEXT PRIMARY KEY, namespace TEXT, validator TEXT, datatype_name TEXT, datatype_version TEXT, hash TEXT,
         value TEXT, created TEXT, blob_hash TEXT, blob_size INTEGER, blob_name TEXT, blob_public TEXT);
       CREATE TABLE messages (id TEXT PRIMARY KEY, namespace TEXT, type TEXT, txtype TEXT, author TEXT, key TEXT, cid TEXT, created TEXT,
         created_key TEXT, grp TEXT, topics TEXT, tag TEXT, datahash TEXT, hash TEXT, data TEXT, state TEXT, local INTEGER,
         batch_id TEXT, tx_id TEXT, pins TEXT, idempotency_key TEXT);`,
}
const DATA_SQL = `INSERT INTO data (id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
const MESSAGE_SQL = `INSERT INTO messages (id, namespace, type, txtype, author, key, cid, created, created_key, grp, topics, tag, datahash, hash,
         data, state, local, batch_id, tx_id, pins, idempotency_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO NOTHING`

/** Same-sized values every time, so records differ only in how they carry their SQL. */
function acceptParams(i: number): { data: SqlValue[]; message: SqlValue[] } {
  const dataId = `0000000${i}`.slice(-8) + '-0000-4000-8000-000000000000'
  const created = `2024-01-01T00:00:00.${`00000000${i}`.slice(-9)}Z`
  const hash = 'ab'.repeat(32)
  return {
    data: [dataId, 'default', 'json', null, null, hash, '{"greeting":"hello","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}', created, null, null, null, null],
    message: [
      dataId.replace('4000', '4001'), 'default', 'broadcast', 'batch_pin', 'did:firefly:org/org0', '0x' + 'cd'.repeat(20), null, created,
      `${i}`.padStart(20, '0'), null, '["default"]', null, hash, hash, JSON.stringify([{ id: dataId, hash }]), 'ready', 1, null, null, null, null,
    ],
  }
}

/** A format-1 record: every statement carries its SQL text (positional text/number/null values only). */
function formatOneRecord(seq: number, statements: { sql: string; params: (string | number | null)[] }[]): Buffer {
  const parts: Buffer[] = []
  const u8 = (v: number): void => void parts.push(Buffer.from([v]))
  const u32 = (v: number): void => {
    const b = Buffer.alloc(4)
    b.writeUInt32LE(v)
    parts.push(b)
  }
  const str = (s: string): void => {
    u32(Buffer.byteLength(s))
    parts.push(Buffer.from(s, 'utf8'))
  }
  for (const st of statements) {
    u8(1)
    str(st.sql)
    u8(1)
    u32(st.params.length)
    for (const v of st.params) {
      if (v === null) u8(0)
      else if (typeof v === 'number') {
        u8(1)
        const b = Buffer.alloc(8)
        b.writeDoubleLE(v)
        parts.push(b)
      } else {
        u8(3)
        str(v)
      }
    }
  }
  const body = Buffer.concat(parts)
  const head = Buffer.alloc(16)
  head.writeUInt32LE(12 + body.length, 0)
  head.writeBigUInt64LE(BigInt(seq), 4)
  head.writeUInt32LE(statements.length, 12)
  return Buffer.concat([head, body])
}

describe('db: journal format 2 names statements', function () {
  const temp = new TempDirs()
  const { open: openDb, closeAll } = openedDatabases()
  afterEach(closeAll)
  after(() => temp.cleanup())

  it('writes a statement’s SQL once per journal file: later records, and records after a restart, refer to it', async function () {
    const dir = await temp.make()
    const db = await openDb(dir, { migrations: [itemsMigration, acceptMigration] })
    const accept = (i: number): Promise<void> =>
      db.transaction((tx) => {
        const p = acceptParams(i)
        tx.run(DATA_SQL, p.data)
        tx.run(MESSAGE_SQL, p.message)
      })
    let size = db.stats().journalBytes
    const frame = async (i: number): Promise<number> => {
      await accept(i)
      const grown = db.stats().journalBytes - size
      size = db.stats().journalBytes
      return grown
    }
    const first = await frame(1)
    const later = [await frame(2), await frame(3), await frame(4)]
    const textBytes = Buffer.byteLength(DATA_SQL) + Buffer.byteLength(MESSAGE_SQL)
    console.log(
      `      two-insert accept transaction: first frame ${first} B (defines its two statements, ${textBytes} B of SQL), ` +
        `later frames ${later[0]} B (12 B frame header + ${(later[0] ?? 0) - 12} B record; format 1 wrote ${first - 8} B per frame)`,
    )
    // A definition is the reference plus the text and its length: nothing else differs.
    for (const n of later) expect(first - n).to.equal(textBytes + 2 * 4)
    expect(await occurrences(dir, MESSAGE_SQL)).to.equal(1)

    // After a crash the writer continues from the dictionary recovery read.
    const image = await temp.crashImage(dir)
    const reopened = await openDb(image, { migrations: [itemsMigration, acceptMigration] })
    const before = reopened.stats().journalBytes
    await reopened.transaction((tx) => {
      const p = acceptParams(5)
      tx.run(DATA_SQL, p.data)
      tx.run(MESSAGE_SQL, p.message)
    })
    expect(reopened.stats().journalBytes - before).to.equal(later[0])
    expect(await occurrences(image, MESSAGE_SQL)).to.equal(1)
    const records = await journalRecords(image)
    expect(records.at(-1)?.ops.map((op) => op.sql)).to.deep.equal([DATA_SQL, MESSAGE_SQL])
    const replayed = await openDb(await temp.crashImage(image), { migrations: [itemsMigration, acceptMigration] })
    expect(replayed.get('SELECT COUNT(*) AS n FROM messages')).to.deep.equal({ n: 5 })

    // A checkpoint starts a fresh journal, and so a fresh dictionary.
    await reopened.checkpoint()
    expect(reopened.stats().journalBytes).to.equal(8)
    await reopened.transaction((tx) => tx.run(DATA_SQL, acceptParams(6).data))
    expect(await occurrences(image, DATA_SQL)).to.equal(1)
    expect(await occurrences(image, MESSAGE_SQL)).to.equal(0)
  })

  it('forgets the definitions of a torn tail: the next use defines the statement again', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    const known = 'INSERT INTO items (id, name) VALUES (?, ?)'
    const torn = 'INSERT INTO items (id, name, data) VALUES (?, ?, ?)'
    await db.transaction((tx) => tx.run(known, [1, 'one']))
    const goodSize = db.stats().journalBytes
    const image = await temp.crashImage(dir)
    await db.transaction((tx) => tx.run(torn, [2, 'two', null]))
    const frame = (await readFile(join(dir, 'journal'))).subarray(goodSize)
    await appendFile(join(image, 'journal'), frame.subarray(0, frame.length - 3))

    const { lines, log } = logCollector()
    const r = await openDb(image, { log })
    expect(lines.join('\n')).to.match(/torn tail/)
    await r.transaction((tx) => {
      tx.run(torn, [3, 'three', null])
      tx.run(known, [4, 'four'])
    })
    expect(await occurrences(image, torn)).to.equal(1)
    const again = await openDb(await temp.crashImage(image))
    expect(again.all('SELECT id, name FROM items ORDER BY id')).to.deep.equal([
      { id: 1, name: 'one' },
      { id: 3, name: 'three' },
      { id: 4, name: 'four' },
    ])
  })

  it('opens a state folder whose journal is in format 1, and continues it in format 2', async function () {
    const dir = await temp.make()
    const first = await openDb(dir)
    const snapshotSeq = first.stats().lastSeq
    await first.close()
    const sql = 'INSERT INTO items (id, name) VALUES (?, ?)'
    const records = [
      formatOneRecord(snapshotSeq, [{ sql: 'INSERT INTO items (id, name) VALUES (99, ?)', params: ['already in the snapshot'] }]),
      formatOneRecord(snapshotSeq + 1, [{ sql, params: [1, 'one'] }]),
      formatOneRecord(snapshotSeq + 2, [
        { sql, params: [2, 'two'] },
        { sql: 'UPDATE items SET data = ? WHERE id = ?', params: [null, 1] },
      ]),
    ]
    const torn = Buffer.from('PLYR and then nothing valid')
    await writeFile(join(dir, 'journal'), Buffer.concat([Buffer.from('PRLYJNL1', 'latin1'), frameHeader(records), ...records, torn]))

    const { lines, log } = logCollector()
    const db = await openDb(dir, { log })
    expect(db.all('SELECT id, name FROM items ORDER BY id')).to.deep.equal([
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ])
    expect(db.stats().lastSeq).to.equal(snapshotSeq + 2)
    expect(lines.join('\n')).to.match(/torn tail/).and.match(/upgraded to format 2/)
    // Folded into the snapshot: the journal is a fresh format 2 one.
    expect((await readFile(join(dir, 'journal'))).toString('latin1')).to.equal('PRLYJNL2')
    await db.transaction((tx) => tx.run(sql, [3, 'three']))
    const image = await temp.crashImage(dir)
    expect((await openDb(image)).all('SELECT id FROM items ORDER BY id')).to.deep.equal([{ id: 1 }, { id: 2 }, { id: 3 }])
  })

  it('refuses a transaction whose record would pass the frame bound, up to the byte, before it is committed', function () {
    // The whole record (its length field included) is a frame's body, which frameHeader refuses past the bound: a
    // record the check let through there would fail the commit every transaction of the tick shares.
    const record = new RecordBuilder(new StatementNames())
    // A part of a given size, without allocating a gigabyte: checkFits reads only its length.
    const part = (bytes: number) => ({ w: { length: bytes } }) as unknown as TxOps
    const room = MAX_FRAME_BODY_BYTES - record.byteLength - 1 // one byte for a forget op, decided at the seal
    expect(() => record.checkFits(part(room))).not.to.throw()
    expect(() => record.checkFits(part(room + 1))).to.throw(DatabaseError, /transaction too large for one journal record/)
  })

  it('refuses a journal in a format it does not know, saying what to do', async function () {
    const dir = await temp.make()
    await (await openDb(dir)).close()
    const journal = await readFile(join(dir, 'journal'))
    await writeFile(join(dir, 'journal'), Buffer.concat([Buffer.from('PRLYJNL3', 'latin1'), journal.subarray(8)]))
    const err = await Database.open({ dir, migrations: [itemsMigration] }).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(DatabaseError)
    expect((err as DatabaseError).code).to.equal('DB_MIGRATION')
    expect((err as DatabaseError).message).to.match(/format "3".*newer build.*start from a new state folder/)
    // Refused before anything was written.
    expect((await stat(join(dir, 'journal'))).size).to.equal(8)

    await writeFile(join(dir, 'journal'), 'not a journal')
    const corrupt = await Database.open({ dir, migrations: [itemsMigration] }).catch((e: unknown) => e)
    expect((corrupt as DatabaseError).code).to.equal('DB_CORRUPT')
  })
})
