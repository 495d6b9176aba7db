import type { Database, Tx } from '../database.js'

/** Small named values the node keeps across restarts (the chain cursor, its registered identities, ...). */
export class NodeStateRepo {
  constructor(private readonly db: Database) {}

  get(key: string): string | undefined {
    const row = this.db.get<{ value: string }>('SELECT value FROM node_state WHERE key = ?', [key])
    return row?.value
  }

  set(tx: Tx, key: string, value: string): void {
    tx.write('INSERT INTO node_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value])
  }

  /** The next block the chain follower must read. */
  chainCursor(): number | undefined {
    const v = this.get('chain.nextBlock')
    return v === undefined ? undefined : Number(v)
  }

  setChainCursor(tx: Tx, nextBlock: number): void {
    this.set(tx, 'chain.nextBlock', String(nextBlock))
  }
}
