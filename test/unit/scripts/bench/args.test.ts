import { expect } from 'chai'
import { DEFAULTS, parseArgs, UsageError } from '../../../../scripts/bench/args.js'

describe('bench options', () => {
  it('takes both --name value and --name=value, and keeps the defaults for the rest', () => {
    const o = parseArgs(['--messages', '200', '--concurrency=10', '--only', 'broadcast,receive', '--keep'])
    expect(o).to.deep.equal({ ...DEFAULTS, messages: 200, concurrency: 10, only: ['broadcast', 'receive'], keep: true })
  })

  it('takes the engine: sqljs by default, postgres to run the scenarios on both', () => {
    expect(parseArgs([])).to.include({ database: 'sqljs', pacedAtHalf: false })
    expect(parseArgs(['--database', 'postgres'])).to.include({ database: 'postgres', pacedAtHalf: true })
    expect(parseArgs(['--database', 'postgres', '--rate', '40'])).to.include({ database: 'postgres', pacedAtHalf: false, rate: 40 })
    expect(parseArgs(['--database', 'postgres', '--only', 'capacity', '--capacity-messages', '2000000'])).to.include({ database: 'postgres', capacityMessages: 2_000_000 })
    expect(() => parseArgs(['--database=mysql'])).to.throw(UsageError, '--database must be sqljs or postgres (got "mysql")')
  })

  it('refuses an unknown option, a missing value and a value out of range, naming it', () => {
    expect(() => parseArgs(['--fast'])).to.throw(UsageError, 'unknown option "--fast"')
    expect(() => parseArgs(['--messages'])).to.throw(UsageError, '--messages needs a value')
    expect(() => parseArgs(['--members', '0'])).to.throw(UsageError, '--members must be a whole number from 1 to 16 (got "0")')
    expect(() => parseArgs(['--rate', 'x'])).to.throw(UsageError, '--rate must be a number')
  })

  it('runs a one-member network for the broadcast and starvation scenarios alone: the sender with no member receiving', () => {
    expect(parseArgs(['--members', '1', '--only', 'broadcast'])).to.include({ members: 1 })
    for (const argv of [['--members', '1'], ['--members', '1', '--only', 'broadcast,private'], ['--members=1', '--only=receive']]) {
      expect(() => parseArgs(argv), argv.join(' ')).to.throw(UsageError, '--members 1 runs only the broadcast and starvation scenarios')
    }
    expect(parseArgs(['--members', '2', '--only', 'private'])).to.include({ members: 2 })
  })

  it('attacks a one-member network in the starvation scenario unless told otherwise', () => {
    expect(parseArgs(['--only', 'starvation', '--attack-seconds', '5'])).to.include({ members: 1, attackSeconds: 5 })
    expect(parseArgs(['--only', 'starvation', '--members', '2'])).to.include({ members: 2 })
    expect(parseArgs(['--only', 'starvation,private'])).to.include({ members: DEFAULTS.members })
  })

  it('answers help', () => {
    expect(parseArgs(['--messages', '5', '--help'])).to.equal('help')
  })
})
