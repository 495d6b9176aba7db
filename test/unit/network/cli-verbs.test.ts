import { expect } from 'chai'
import { parseVerb, UsageError } from '../../../network/cli-verbs.js'

describe('npm run network -- <verb>: argument parsing', () => {
  const parse = (verb: string, ...args: string[]) => parseVerb(verb, args, '.network')
  const fails = (verb: string, args: string[], pattern: RegExp): void => {
    expect(() => parseVerb(verb, args)).to.throw(UsageError, pattern)
  }

  it('reads each verb, with --dir defaulting as network:up does', () => {
    expect(parse('pause', 'org1')).to.deep.equal({ dir: '.network', help: false, command: { verb: 'pause', target: 'org1' } })
    expect(parse('kill', 'org1/node1', '--dir', '/tmp/x').command).to.deep.equal({ verb: 'kill', target: 'org1/node1', signal: 'SIGKILL' })
    expect(parse('kill', 'chain', '--signal', 'term').command).to.deep.equal({ verb: 'kill', target: 'chain', signal: 'SIGTERM' })
    expect(parse('hold', 'org0', 'org1').command).to.deep.equal({ verb: 'hold', deliveries: { from: 'org0', to: 'org1' } })
    expect(parse('drop', 'org0', 'org1', '--message', 'm1').command).to.deep.equal({ verb: 'drop', deliveries: { from: 'org0', to: 'org1', message: 'm1' } })
    expect(parse('release', 'org0', 'org1', '--batch', 'b1').command).to.deep.equal({ verb: 'release', deliveries: { from: 'org0', to: 'org1', batch: 'b1' } })
    expect(parse('hold', 'org2', 'chain').command).to.deep.equal({ verb: 'hold', member: 'org2', reading: 'chain' })
    expect(parse('release', 'org2', 'ipfs').command).to.deep.equal({ verb: 'release', member: 'org2', reading: 'ipfs' })
    expect(parse('mining', 'off').command).to.deep.equal({ verb: 'mining', on: false })
    expect(parse('mine').command).to.deep.equal({ verb: 'mine', blocks: 1 })
    expect(parse('mine', '3').command).to.deep.equal({ verb: 'mine', blocks: 3 })
    expect(parse('trace', 'm1', '--json').command).to.deep.equal({ verb: 'trace', message: 'm1', json: true })
    expect(parse('verify', '--namespace', 'a', '--namespace', 'b', '--allow-behind').command).to.deep.equal({ verb: 'verify', namespaces: ['a', 'b'], allowBehind: true, json: false })
    expect(parse('verify', '--members', 'http://127.0.0.2:5000, http://127.0.0.3:5000/').command).to.deep.equal({
      verb: 'verify', namespaces: [], allowBehind: false, json: false, apis: ['http://127.0.0.2:5000', 'http://127.0.0.3:5000/'],
    })
    expect(parse('wait', 'm1', '--members', 'org0, org1', '--timeout', '2.5').command).to.deep.equal({ verb: 'wait', message: 'm1', members: ['org0', 'org1'], timeoutMs: 2500 })
    expect(parse('wait', 'idle').command).to.deep.equal({ verb: 'wait-idle', timeoutMs: 60_000 })
    expect(parse('confirmed', 'org1', 'T').command).to.deep.equal({ verb: 'confirmed', member: 'org1', topic: 'T', namespace: 'default', json: false })
    expect(parse('status', '--help')).to.deep.equal({ dir: '.network', help: true })
    expect(parse('move-db', 'org1', '--to', 'postgres').command).to.deep.equal({ verb: 'move-db', target: 'org1', to: 'postgres' })
    expect(parse('move-db', 'org1', '--to', 'postgres', '--database-url', 'postgres://u:p@h:1/').command).to.deep.equal({ verb: 'move-db', target: 'org1', to: 'postgres', databaseUrl: 'postgres://u:p@h:1/' })
  })

  it('names what is wrong', () => {
    fails('pause', [], /pause takes one member/)
    fails('pause', ['org1', 'org2'], /got 2 arguments: org1 org2/)
    fails('hold', ['org0'], /hold takes <from> <to>/)
    fails('drop', ['org0', 'chain'], /reading is held and released, not dropped/)
    fails('hold', ['org0', 'org1', '--message', 'm', '--batch', 'b'], /not both/)
    fails('hold', ['org0', 'ipfs', '--message', 'm'], /takes no --message or --batch/)
    fails('mining', ['maybe'], /mining takes off or on/)
    fails('mine', ['0'], /from 1 to 10000/)
    fails('mine', ['x'], /from 1 to 10000/)
    fails('kill', ['org1', '--signal', 'SIGNOPE'], /--signal must be one of/)
    fails('pause', ['org1', '--json'], /pause takes no --json/)
    fails('verify', ['--bogus'], /Unknown option '--bogus'/)
    fails('verify', ['--members', 'org1,org2'], /API URL of each member/)
    fails('verify', ['--members', 'http://127.0.0.2:5000', '--dir', 'x'], /--members or --dir, not both/)
    fails('wait', ['m1', '--timeout', 'soon'], /--timeout is in seconds/)
    fails('wait', ['idle', '--members', 'org1'], /wait idle takes only --timeout/)
    fails('trace', ['m1', '--namespace', 'a', '--namespace', 'b'], /one --namespace/)
    fails('frobnicate', [], /unknown command: frobnicate/)
    fails('move-db', ['org1'], /move-db takes --to postgres or --to sqljs$/)
    fails('move-db', ['org1', '--to', 'mysql'], /--to sqljs \(got mysql\)/)
    fails('move-db', ['org1', '--to', 'sqljs', '--signal', 'x'], /move-db takes no --signal/)
  })
})
