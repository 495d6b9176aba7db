import { expect } from 'chai'
import { RefusalLog } from '../../../../node/exchange/refusal-log.js'

describe('exchange: the refusal log, bounded per minute over all certificates', () => {
  let clock: number
  let lines: string[]
  let due: Array<() => void>
  let log: RefusalLog

  beforeEach(() => {
    clock = 0
    lines = []
    due = []
    log = new RefusalLog({
      perMinute: 3,
      log: (l) => lines.push(l),
      now: () => clock,
      schedule: (fn) => {
        due.push(fn)
        return { cancel: () => (due = due.filter((f) => f !== fn)) }
      },
    })
  })

  it('writes the first lines of a minute, counts the rest, and ends the minute with one line giving the count', () => {
    for (let i = 0; i < 10; i++) log.refused(`refused cert-${i}`, `cert-${i}`)
    expect(lines).to.deep.equal(['refused cert-0', 'refused cert-1', 'refused cert-2'])
    clock = 60_000
    due.forEach((fn) => fn())
    expect(lines).to.have.length(4)
    expect(lines[3]).to.match(/^p2p: 7 more refusal\(s\) in the last minute were not logged.*\(quotas.refusalLinesPerMinute\)$/)
    log.refused('refused cert-10', 'cert-10')
    expect(lines.at(-1)).to.equal('refused cert-10')
  })

  it('a key (a certificate) is written once a minute; a quiet minute ends without a line', () => {
    log.refused('refused A', 'A')
    log.refused('refused A again', 'A')
    log.refused('refused B', 'B')
    expect(lines).to.deep.equal(['refused A', 'refused B'])
    // The next refusal after the minute ends it (the timer not run yet): its count first, then the new line.
    clock = 61_000
    log.refused('refused A later', 'A')
    expect(lines.slice(2)).to.have.length(2)
    expect(lines[2]).to.match(/^p2p: 1 more refusal/)
    expect(lines[3]).to.equal('refused A later')
    log.close()
    expect(lines).to.have.length(4)
    expect(due).to.deep.equal([])
  })
})
