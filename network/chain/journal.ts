import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { fsyncDirSync, writeFileAtomicSync } from '../../node/core/atomic-file.js'

/**
 * What makes a chain the same chain across restarts: Hardhat's genesis block is a function of these (the
 * accounts come from Hardhat's fixed mnemonic), so starting again with them gives the identical genesis.
 */
export interface ChainGenesis {
  version: 1
  chainId: number
  hardfork: string
  /** Unix seconds; handed to Hardhat as `initialDate`. */
  timestamp: number
  /** The genesis hash of the first run, to notice when a Hardhat upgrade changed it. */
  hash: string
}

/** One mined block: its number, timestamp, hash (to verify the replay) and its signed transactions, in block order. */
export interface JournalBlock {
  n: number
  t: number
  h: string
  txs: string[]
}

/**
 * A signed transaction the chain accepted (its hash was answered) but did not mine at once: mining was off, or its
 * nonce has a gap. A later block line holds it once it is mined; one that no block line holds is sent again at the
 * next start. Journals written before this record existed hold block lines only, and read the same.
 */
export interface JournalPending {
  pending: string
}

export type JournalRecord = JournalBlock | JournalPending

const GENESIS_FILE = 'chain-genesis.json'
const JOURNAL_FILE = 'chain-journal.jsonl'

/**
 * Whether the chain in `dir` has mined or accepted anything (false for a folder with no journal, or a genesis record
 * only). A journal of pending transactions only is a chain too: its start mines them.
 */
export function journalHasBlocks(dir: string): boolean {
  const file = join(dir, JOURNAL_FILE)
  return existsSync(file) && statSync(file).size > 0
}

/**
 * The chain's durable history in `<dir>`: the genesis parameters, and an append-only file with one JSON line
 * per mined block (`{n, t, h, txs}`) or per transaction accepted without being mined (`{pending}`). Each append
 * is fsynced before the caller answers the RPC request that mined the block or accepted the transaction, so
 * anything a client was told about (a block, a transaction hash) survives a SIGKILL.
 */
export class ChainJournal {
  private fd: number | undefined

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true })
  }

  readGenesis(): ChainGenesis | undefined {
    const file = join(this.dir, GENESIS_FILE)
    if (!existsSync(file)) return undefined
    const g = JSON.parse(readFileSync(file, 'utf8')) as Partial<ChainGenesis>
    if (g.version !== 1 || typeof g.timestamp !== 'number' || typeof g.chainId !== 'number' ||
      typeof g.hardfork !== 'string' || typeof g.hash !== 'string') {
      throw new Error(`${file} is not a chain genesis record this version understands`)
    }
    return g as ChainGenesis
  }

  /** Written once, atomically (temp file, fsync, rename, fsync dir), so a crash never leaves half a genesis. */
  writeGenesis(g: ChainGenesis): void {
    writeFileAtomicSync(join(this.dir, GENESIS_FILE), JSON.stringify(g, null, 2) + '\n')
  }

  /**
   * Every recorded block, in order, and every transaction recorded as pending, in the order the chain accepted them
   * (mined since or not). A last line without its newline is the remains of a write that was cut short by a crash:
   * its RPC request was never answered, so it is dropped (and cut from the file). Damage anywhere else is not
   * something to guess about.
   */
  read(): { blocks: JournalBlock[]; pending: string[]; droppedTornTail: boolean } {
    const file = join(this.dir, JOURNAL_FILE)
    if (!existsSync(file)) return { blocks: [], pending: [], droppedTornTail: false }
    const text = readFileSync(file, 'utf8')
    const lastNewline = text.lastIndexOf('\n')
    const complete = text.slice(0, lastNewline + 1)
    const droppedTornTail = complete.length !== text.length
    if (droppedTornTail) {
      const fd = openSync(file, 'r+')
      try {
        ftruncateSync(fd, Buffer.byteLength(complete))
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
    }
    const blocks: JournalBlock[] = []
    const pending: string[] = []
    for (const [i, line] of complete.split('\n').entries()) {
      if (line.length === 0) continue
      const record = parseRecord(line, `${file}:${i + 1}`)
      if ('pending' in record) pending.push(record.pending)
      else blocks.push(record)
    }
    return { blocks, pending, droppedTornTail }
  }

  /** Appends and fsyncs, in one write; returns only once every record is on disk. */
  append(records: JournalRecord[]): void {
    if (records.length === 0) return
    if (this.fd === undefined) {
      const existed = existsSync(join(this.dir, JOURNAL_FILE))
      this.fd = openSync(join(this.dir, JOURNAL_FILE), 'a')
      // A new file's directory entry must be durable too, or the whole journal could vanish on power loss.
      if (!existed) fsyncDirSync(this.dir)
    }
    writeSync(this.fd, records.map((r) => JSON.stringify(r) + '\n').join(''))
    fsyncSync(this.fd)
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}

const isRawTx = (tx: unknown): tx is string => typeof tx === 'string' && /^0x[0-9a-f]*$/i.test(tx)

function parseRecord(line: string, where: string): JournalRecord {
  let r: Partial<JournalBlock> & Partial<JournalPending>
  try {
    r = JSON.parse(line) as Partial<JournalBlock> & Partial<JournalPending>
  } catch {
    throw new Error(`${where}: the chain journal is damaged (not JSON)`)
  }
  if (r.pending !== undefined) {
    if (!isRawTx(r.pending)) throw new Error(`${where}: the chain journal is damaged (not a pending transaction record)`)
    return { pending: r.pending }
  }
  if (typeof r.n !== 'number' || typeof r.t !== 'number' || typeof r.h !== 'string' || !Array.isArray(r.txs) || !r.txs.every(isRawTx)) {
    throw new Error(`${where}: the chain journal is damaged (not a block record)`)
  }
  return r as JournalBlock
}
