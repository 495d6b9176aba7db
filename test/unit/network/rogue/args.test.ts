import { expect } from 'chai'
import { byteCount, parseRogue, RogueUsageError } from '../../../../network/rogue/args.js'
import { parseVerb, UsageError } from '../../../../network/cli-verbs.js'

describe('npm run network -- rogue: argument parsing', () => {
  const parse = (...args: string[]) => parseRogue(args, '.network').command
  const fails = (args: string[], pattern: RegExp): void => {
    expect(() => parseRogue(args, '.network')).to.throw(RogueUsageError, pattern)
  }

  it('reads each attack, from a member or a chain account', () => {
    expect(parse('--account', '15', 'garbage-pin', '--topic', 'orders')).to.deep.equal({ verb: 'rogue', who: { account: 15 }, run: { attack: 'garbage-pin', topic: 'orders' }, json: false })
    expect(parse('org1', 'garbage-pin', '--topic', 'orders', '--json')).to.deep.equal({ verb: 'rogue', who: 'org1', run: { attack: 'garbage-pin', topic: 'orders' }, json: true })
    expect(parse('garbage-pin', '--account', 'fresh', '--topic', 't')?.who).to.deep.equal({ fresh: true })
    expect(parse('org1', 'squat-pin', '--next')?.run).to.deep.equal({ attack: 'squat-pin', next: true, timeoutMs: 30_000 })
    expect(parse('org1', 'squat-pin', '--batch', 'b1', '--topic', 't', '--payload-ref', 'x', '--timeout', '2')?.run).to.deep.equal({ attack: 'squat-pin', next: false, batch: 'b1', topic: 't', payloadRef: 'x', timeoutMs: 2000 })
    expect(parse('org1', 'deliver-under', '--victim', 'org0', '--batch', 'b1')?.run).to.deep.equal({ attack: 'deliver-under', victim: 'org0', batch: 'b1' })
    expect(parse('org1', 'reuse-id', '--message', 'm1')?.run).to.deep.equal({ attack: 'reuse-id', message: 'm1' })
    expect(parse('org1', 'reuse-id', '--message', 'm1', '--to', 'org2, org0', '--namespace', 'ns')?.run).to.deep.equal({ attack: 'reuse-id', message: 'm1', to: ['org2', 'org0'], namespace: 'ns' })
    expect(parse('org1', 'reuse-id', '--message', 'm1', '--to', 'org0', '--datatype', 'nosuch/1')?.run).to.deep.equal({ attack: 'reuse-id', message: 'm1', to: ['org0'], datatype: { name: 'nosuch', version: '1' } })
    expect(parse('org1', 'foreign-group', '--org', 'org2', '--node', 'node0', '--namespace', 'ns')?.run).to.deep.equal({ attack: 'foreign-group', org: 'org2', node: 'node0', namespace: 'ns' })
    expect(parse('claim-name')).to.deep.equal({ verb: 'rogue', who: { fresh: true }, run: { attack: 'claim-name' }, json: false })
    expect(parse('claim-name', '--account', '16', '--name', 'org3')?.who).to.deep.equal({ account: 16 })
    expect(parse('org1', 'flood-blobs', '--to', 'org0', '--bytes', '64MiB', '--count', '4')?.run).to.deep.equal({ attack: 'flood-blobs', to: 'org0', bytes: 64 * 1024 * 1024, count: 4 })
    expect(parse('org1', 'flood-batches', '--to', 'org0', '--bytes', '240MiB', '--count', '8')?.run).to.deep.equal({ attack: 'flood-batches', to: 'org0', bytes: 240 * 1024 * 1024, count: 8 })
    expect(parse('org0', 'repin-private')?.run).to.deep.equal({ attack: 'repin-private', timeoutMs: 30_000 })
    expect(parse('org0', 'repin-private', '--first', 'org0,org2', '--namespace', 'ns', '--timeout', '5')?.run).to.deep.equal({ attack: 'repin-private', first: ['org0', 'org2'], namespace: 'ns', timeoutMs: 5000 })
    expect(parseRogue(['--help'], '/d')).to.deep.equal({ dir: '/d', help: true })
    expect(parseRogue(['org1', 'claim-name', '--dir', '/x'], '.network').dir).to.equal('/x')
  })

  it('names what is wrong', () => {
    fails([], /<attack>, the attack one of garbage-pin/)
    fails(['org1', 'steal'], /got steal/)
    fails(['org1', 'garbage-pin'], /needs --topic/)
    fails(['garbage-pin', '--topic', 't'], /needs the member that attacks .* or a chain account/)
    fails(['deliver-under', '--victim', 'org0', '--batch', 'b'], /needs the member that attacks \(rogue org1 deliver-under/)
    fails(['org1', 'garbage-pin', '--topic', 't', '--account', '3'], /an org or --account, not both/)
    fails(['--account', '20', 'garbage-pin', '--topic', 't'], /0 to 19, or fresh \(got 20\)/)
    fails(['org1', 'squat-pin'], /--batch ID or --next/)
    fails(['org1', 'squat-pin', '--next', '--batch', 'b'], /--batch ID or --next/)
    fails(['org1', 'deliver-under', '--victim', 'org0', '--batch', 'b', '--account', '1'], /deliver-under takes no --account/)
    fails(['org1', 'flood-blobs', '--to', 'org0', '--bytes', '1', '--count', '0'], /--count is a number of blobs/)
    fails(['org1', 'flood-batches', '--to', 'org0', '--bytes', '1', '--count', '0'], /--count is a number of batches/)
    fails(['org1', 'reuse-id'], /needs --message/)
    fails(['org0', 'repin-private', '--first', ' , '], /repin-private: --first names one or more orgs/)
    fails(['repin-private', '--account', '3'], /repin-private takes no --account/)
    fails(['org1', 'reuse-id', '--message', 'm', '--to', ','], /--to names one or more orgs/)
    fails(['org1', 'reuse-id', '--message', 'm', '--datatype', 'nosuch'], /--datatype is NAME\/VERSION/)
    fails(['reuse-id', '--message', 'm', '--account', '3'], /reuse-id takes no --account/)
    fails(['org1', 'garbage-pin', 'extra', '--topic', 't'], /takes \[<org>\] <attack>/)
    fails(['org1', 'garbage-pin', '--topic', 't', '--bogus'], /bogus/)
  })

  it('is the rogue verb of the network command, its mistakes usage errors', () => {
    expect(parseVerb('rogue', ['org1', 'garbage-pin', '--topic', 't']).command).to.deep.equal({ verb: 'rogue', who: 'org1', run: { attack: 'garbage-pin', topic: 't' }, json: false })
    expect(() => parseVerb('rogue', ['org1'])).to.throw(UsageError, /<attack>/)
  })

  it('reads byte counts with units', () => {
    expect(byteCount('1048576')).to.equal(1048576)
    expect(byteCount('64KiB')).to.equal(65536)
    expect(byteCount('1.5GiB')).to.equal(1.5 * 1024 ** 3)
    expect(byteCount('10MB')).to.equal(10_000_000)
    expect(byteCount('2k')).to.equal(2000)
    expect(() => byteCount('lots')).to.throw(RogueUsageError, /--bytes is a number of bytes/)
    expect(() => byteCount('0')).to.throw(RogueUsageError, /at least 1/)
  })
})
