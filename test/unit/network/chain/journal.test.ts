import { expect } from 'chai'
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ChainJournal, journalHasBlocks, type ChainGenesis } from '../../../../network/chain/journal.js'

/**
 * The chain's journal on disk, read back as a restarted chain reads it: a torn last line dropped and cut, damage
 * anywhere else refused with its line. Files named as network/chain/journal.ts names them.
 */
describe('network/chain/journal: the chain\'s history on disk', () => {
  const JOURNAL = 'chain-journal.jsonl'
  const GENESIS = 'chain-genesis.json'
  let dir: string
  const block = { n: 1, t: 1_700_000_000, h: '0xaa', txs: ['0x02f8'] }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'journal-'))
  })

  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  function failure(fn: () => unknown): string {
    try {
      fn()
    } catch (err) {
      return (err as Error).message
    }
    return expect.fail('the journal was read')
  }

  it('keeps a genesis record, and refuses one of another version or shape', () => {
    const j = new ChainJournal(dir)
    expect(j.readGenesis()).to.equal(undefined)
    const g: ChainGenesis = { version: 1, chainId: 31337, hardfork: 'cancun', timestamp: 1_700_000_000, hash: '0xgen' }
    j.writeGenesis(g)
    expect(j.readGenesis()).to.deep.equal(g)
    for (const bad of [{ ...g, version: 2 }, { ...g, chainId: '31337' }, { ...g, hash: undefined }]) {
      writeFileSync(join(dir, GENESIS), JSON.stringify(bad))
      expect(failure(() => j.readGenesis())).to.equal(`${join(dir, GENESIS)} is not a chain genesis record this version understands`)
    }
  })

  it('appends blocks and pending transactions and reads them back in order; an empty append writes nothing', () => {
    const j = new ChainJournal(dir)
    expect(j.read()).to.deep.equal({ blocks: [], pending: [], droppedTornTail: false })
    j.append([])
    expect(journalHasBlocks(dir)).to.equal(false)
    j.append([block, { pending: '0x01' }])
    j.append([{ ...block, n: 2 }])
    j.close()
    j.close()
    expect(journalHasBlocks(dir)).to.equal(true)
    expect(new ChainJournal(dir).read()).to.deep.equal({ blocks: [block, { ...block, n: 2 }], pending: ['0x01'], droppedTornTail: false })
  })

  it('drops a last line cut short by a crash, and cuts it from the file', () => {
    const j = new ChainJournal(dir)
    j.append([block])
    j.close()
    appendFileSync(join(dir, JOURNAL), '{"n":2,"t":17')
    expect(j.read()).to.deep.equal({ blocks: [block], pending: [], droppedTornTail: true })
    expect(readFileSync(join(dir, JOURNAL), 'utf8')).to.equal(JSON.stringify(block) + '\n')
  })

  it('refuses damage before the last line, naming the line', () => {
    const file = join(dir, JOURNAL)
    const cases: [string, string][] = [
      ['not json', 'not JSON'],
      ['{"pending":"0xzz"}', 'not a pending transaction record'],
      ['{"n":1,"t":2,"h":"0x","txs":["nope"]}', 'not a block record'],
      ['{"n":"1","t":2,"h":"0x","txs":[]}', 'not a block record'],
    ]
    for (const [line, what] of cases) {
      writeFileSync(file, `${JSON.stringify(block)}\n${line}\n`)
      expect(failure(() => new ChainJournal(dir).read())).to.equal(`${file}:2: the chain journal is damaged (${what})`)
    }
  })
})
