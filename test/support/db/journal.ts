import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { scanJournal } from '../../../node/db/journal-file.js'
import { decodeRecord, type DecodedRecord } from '../../../node/db/journal-record.js'

/** Every record of `<dir>/journal` (or another journal file), decoded in file order as recovery does (statement names resolved). */
export async function journalRecords(dir: string, file = 'journal'): Promise<DecodedRecord[]> {
  const buf = await readFile(join(dir, file))
  const scan = scanJournal(buf)
  const names: string[] = []
  return scan.records.map((ref) => decodeRecord(buf, ref, names, scan.format))
}

/** How many times `text` occurs in the journal's bytes (SQL is stored as UTF-8). */
export async function occurrences(dir: string, text: string): Promise<number> {
  const buf = await readFile(join(dir, 'journal'))
  const needle = Buffer.from(text, 'utf8')
  let n = 0
  for (let at = buf.indexOf(needle); at >= 0; at = buf.indexOf(needle, at + 1)) n++
  return n
}
