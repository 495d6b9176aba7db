import { expect } from 'chai'
import { compileFilter } from '../../../../node/events/filter.js'
import { isParleyError } from '../../../../node/core/errors.js'
import type { EventId, Hash, MessageId, TxId, BatchId, Address } from '../../../../node/core/ids.js'
import type { Timestamp } from '../../../../node/core/time.js'
import type { EnrichedEvent, EventType, Message, StoredBlockchainEvent, SubscriptionFilter } from '../../../../node/model/index.js'

const T = '2024-01-01T00:00:00Z' as Timestamp
const GROUP = 'ab'.repeat(32) as Hash

function message(over: Partial<Message['header']> = {}): Message {
  return {
    header: {
      id: '00000000-0000-4000-8000-000000000001' as MessageId,
      type: 'private',
      txtype: 'batch_pin',
      author: 'did:firefly:org/org0',
      key: '0xkey',
      created: T,
      namespace: 'default',
      group: GROUP,
      topics: ['orders', 'invoices'],
      tag: 'purchase',
      datahash: 'cd'.repeat(32) as Hash,
      ...over,
    },
    hash: 'ef'.repeat(32) as Hash,
    state: 'confirmed',
    data: [],
  }
}

function event(type: EventType, refs: EnrichedEvent['refs'] = {}, topic?: string): EnrichedEvent {
  return {
    event: { id: '00000000-0000-4000-8000-0000000000e1' as EventId, sequence: 1, type, namespace: 'default', reference: 'r', created: T, ...(topic !== undefined ? { topic } : {}) },
    refs,
  }
}

const confirmed = event('message_confirmed', { message: message() }, 'orders')
const broadcast = event('message_confirmed', { message: message({ type: 'broadcast', group: undefined, tag: undefined, topics: ['news'] }) }, 'news')
const txSubmitted = event('transaction_submitted', { transaction: { id: '00000000-0000-4000-8000-0000000000f1' as TxId, namespace: 'default', type: 'batch_pin', created: T, blockchainIds: [] } }, 'batch_pin')
const pinEvent: StoredBlockchainEvent = {
  seq: 1,
  id: 'be1',
  received: T,
  blockNumber: 1,
  txIndex: 0,
  logIndex: 0,
  protocolId: '000000000001/000000/000000',
  txHash: '0x01',
  author: '0x0000000000000000000000000000000000000001' as Address,
  timestamp: 1,
  action: 'firefly:batch_pin',
  txId: '00000000-0000-4000-8000-0000000000f1' as TxId,
  batchId: '00000000-0000-4000-8000-0000000000b1' as BatchId,
  batchHash: GROUP,
  payloadRef: '',
  contexts: [],
}
const chainEvent = event('blockchain_event_received', { blockchainEvent: pinEvent }, 'ff_batch_pin')
const identity = event('identity_confirmed', {}, 'ff_definition')
const ALL = [confirmed, broadcast, txSubmitted, chainEvent, identity]

const matching = (filter: SubscriptionFilter): EnrichedEvent[] => ALL.filter(compileFilter(filter))

describe('subscriptions: filter matching', () => {
  it('no keys: every event matches', () => {
    expect(matching({})).to.deep.equal(ALL)
  })

  it('events: the event type', () => {
    expect(matching({ events: 'message_confirmed' })).to.deep.equal([confirmed, broadcast])
    expect(matching({ events: '^(transaction_submitted|identity_confirmed)$' })).to.deep.equal([txSubmitted, identity])
  })

  it('topic: the event topic', () => {
    expect(matching({ topic: '^orders$' })).to.deep.equal([confirmed])
    expect(matching({ topic: '^ff_' })).to.deep.equal([chainEvent, identity])
  })

  it('message.author, message.group, message.tag: the referred message header', () => {
    expect(matching({ message: { author: 'org0$' } })).to.deep.equal([confirmed, broadcast])
    expect(matching({ message: { group: `^${GROUP}$` } })).to.deep.equal([confirmed])
    expect(matching({ message: { tag: 'purch' } })).to.deep.equal([confirmed])
  })

  it('message.topics: any topic of the message', () => {
    expect(matching({ message: { topics: '^invoices$' } })).to.deep.equal([confirmed])
    expect(matching({ message: { topics: '^(news|orders)$' } })).to.deep.equal([confirmed, broadcast])
  })

  it('transaction.type: the referred transaction', () => {
    expect(matching({ transaction: { type: '^batch_pin$' } })).to.deep.equal([txSubmitted])
  })

  it('blockchainevent.name and listener: the BatchPin event, from no listener', () => {
    expect(matching({ blockchainevent: { name: '^BatchPin$' } })).to.deep.equal([chainEvent])
    expect(matching({ blockchainevent: { listener: '.+' } })).to.deep.equal([])
    expect(matching({ blockchainevent: { listener: '^$' } })).to.deep.equal(ALL)
  })

  it('is unanchored, as Go MatchString: a match anywhere counts', () => {
    expect(matching({ events: 'confirm' })).to.deep.equal([confirmed, broadcast, identity])
    expect(matching({ message: { author: 'firefly' } })).to.deep.equal([confirmed, broadcast])
  })

  it('a missing value is the empty string: .* still matches it, .+ does not', () => {
    // No message on these events, no tag on the broadcast, no group on it.
    expect(matching({ message: { tag: '.*' } })).to.deep.equal(ALL)
    expect(matching({ message: { tag: '.+' } })).to.deep.equal([confirmed])
    expect(matching({ message: { group: '^$' } })).to.deep.equal([broadcast, txSubmitted, chainEvent, identity])
    expect(matching({ topic: '^$' })).to.deep.equal([])
    expect([event('message_rejected')].filter(compileFilter({ topic: '^$', message: { topics: '^$' } }))).to.have.length(1)
  })

  it('every key given must match', () => {
    expect(matching({ events: 'message_confirmed', message: { tag: 'purchase' } })).to.deep.equal([confirmed])
    expect(matching({ events: 'message_confirmed', transaction: { type: '.' } })).to.deep.equal([])
  })

  it('an empty expression counts as none', () => {
    expect(matching({ events: '', message: { tag: '' } })).to.deep.equal(ALL)
  })

  it('RE2 syntax: inline flags work, a bad expression is INVALID_FIELD', () => {
    expect(matching({ message: { tag: '(?i)^PURCHASE$' } })).to.deep.equal([confirmed])
    try {
      compileFilter({ events: '(?<=x)' })
      expect.fail('should throw')
    } catch (e) {
      expect(isParleyError(e, 'INVALID_FIELD')).to.equal(true)
      expect((e as Error).message).to.match(/^unable to compile filter\.events regexp/)
    }
  })

  it('runs in linear time: (a+)+$ on 100k characters, matching and not', () => {
    const tail = (text: string) => event('message_confirmed', { message: message({ tag: text, topics: ['x', text] }) }, text)
    const miss = tail(`${'a'.repeat(100_000)}!`)
    const hit = tail('a'.repeat(100_000))
    const start = performance.now()
    for (const filter of [{ topic: '(a+)+$' }, { message: { tag: '(a+)+$' } }, { message: { topics: '(a|aa)+$' } }] satisfies SubscriptionFilter[]) {
      const match = compileFilter(filter)
      expect(match(miss), JSON.stringify(filter)).to.equal(false)
      expect(match(hit), JSON.stringify(filter)).to.equal(true)
    }
    // A backtracking engine would not finish one of these in a lifetime; RE2 takes milliseconds each.
    expect(performance.now() - start).to.be.below(3000)
  })
})
