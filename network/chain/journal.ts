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

/** One mined block: its number, timestamp, hash (to verify the replay) and its signed transactions. */
export interface JournalBlock {
  n: number
  t: number
  h: string
  txs: string[]
}

const GENESIS_FILE = 'chain-genesis.json'
const JOURNAL_FILE = 'chain-journal.jsonl'

/** Whether the chain in `dir` has mined anything (false for a folder with no journal, or a genesis record only). */
export function journalHasBlocks(dir: string): boolean {
  const file = join(dir, JOURNAL_FILE)
  return existsSync(file) && statSync(file).size > 0
}

/**
 * The chain's durable history in `<dir>`: the genesis parameters, and an append-only file with one JSON line
 * per mined block. Each append is fsynced before the caller answers the RPC request that mined the block, so
 * anything a client was told about survives a SIGKILL.
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
   * Every recorded block, in order. A last line without its newline is the remains of a write that was cut
   * short by a crash: its RPC request was never answered, so it is dropped (and cut from the file). Damage
   * anywhere else is not something to guess about.
   */
  readBlocks(): { blocks: JournalBlock[]; droppedTornTail: boolean } {
    const file = join(this.dir, JOURNAL_FILE)
    if (!existsSync(file)) return { blocks: [], droppedTornTail: false }
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
    const blocks = complete
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line, i) => parseBlock(line, `${file}:${i + 1}`))
    return { blocks, droppedTornTail }
  }

  /** Appends and fsyncs; returns only once the block is on disk. */
  append(blocks: JournalBlock[]): void {
    if (blocks.length === 0) return
    if (this.fd === undefined) {
      const existed = existsSync(join(this.dir, JOURNAL_FILE))
      this.fd = openSync(join(this.dir, JOURNAL_FILE), 'a')
      // A new file's directory entry must be durable too, or the whole journal could vanish on power loss.
      if (!existed) fsyncDirSync(this.dir)
    }
    writeSync(this.fd, blocks.map((b) => JSON.stringify(b) + '\n').join(''))
    fsyncSync(this.fd)
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}

function parseBlock(line: string, where: string): JournalBlock {
  let b: Partial<JournalBlock>
  try {
    b = JSON.parse(line) as Partial<JournalBlock>
  } catch {
    throw new Error(`${where}: the chain journal is damaged (not JSON)`)
  }
  if (typeof b.n !== 'number' || typeof b.t !== 'number' || typeof b.h !== 'string' || !Array.isArray(b.txs) ||
    !b.txs.every((tx) => typeof tx === 'string' && /^0x[0-9a-f]*$/i.test(tx))) {
    throw new Error(`${where}: the chain journal is damaged (not a block record)`)
  }
  return b as JournalBlock
}
