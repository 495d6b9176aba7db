import { expect } from 'chai'
import { HeadWatcher, wsUrlOf, type Head } from '../../../../node/chain/heads.js'
import { ScriptedChain } from '../../../support/scripted-chain.js'
import { waitUntil } from '../../../support/wait.js'

/** New-block notifications from a scripted endpoint: what a watcher makes of good, bad and lost subscriptions. */
describe('head watcher: newHeads subscriptions, malformed notifications and drops', () => {
  let endpoint: ScriptedChain
  let url: string
  let watcher: HeadWatcher | undefined
  let heads: Head[]
  let changes: number

  beforeEach(async () => {
    endpoint = new ScriptedChain()
    url = await endpoint.start()
    heads = []
    changes = 0
  })
  afterEach(async () => {
    watcher?.stop()
    watcher = undefined
    await endpoint.stop()
  })

  const watch = (): HeadWatcher => {
    watcher = new HeadWatcher(wsUrlOf(url), (h) => heads.push(h), () => changes++)
    watcher.start()
    watcher.start() // started already: one connection
    return watcher
  }

  it('derives the WebSocket address of an endpoint, wss for https', () => {
    expect(wsUrlOf('http://127.0.0.1:8545')).to.equal('ws://127.0.0.1:8545/')
    expect(wsUrlOf('https://rpc.example/v1/key')).to.equal('wss://rpc.example/v1/key')
  })

  it('passes on heads with and without a base fee, and ignores notifications it cannot read', async () => {
    endpoint.subscriptions = true
    const w = watch()
    await waitUntil('subscribed', () => w.subscribed)
    expect(changes).to.equal(1)
    expect(endpoint.subscriberCount).to.equal(1)
    endpoint.sendRaw('not json')
    endpoint.sendRaw(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { result: { number: 12 } } }))
    endpoint.sendRaw(JSON.stringify({ jsonrpc: '2.0', method: 'eth_other', params: { result: { number: '0x1' } } }))
    endpoint.announce(7)
    endpoint.sendRaw(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { result: { number: '0x8', baseFeePerGas: 'lots' } } }))
    endpoint.announce(9, 1000n)
    await waitUntil('three heads', () => heads.length === 3)
    expect(heads).to.deep.equal([
      { number: 7, baseFee: undefined },
      { number: 8, baseFee: undefined },
      { number: 9, baseFee: 1000n },
    ])
  })

  it('counts a refused subscription, or one answered without an id, as a failure and tries again', async () => {
    endpoint.subscriptions = true
    endpoint.subscriptionId = 42
    const w = watch()
    await waitUntil('a failure', () => w.failures >= 1)
    expect(w.lastError).to.equal('eth_subscribe refused: no subscription id')
    expect(w.subscribed).to.equal(false)
    endpoint.subscriptionId = '0xfeed'
    await waitUntil('subscribed', () => w.subscribed)
    expect(w.failures).to.equal(0)
    expect(w.lastError).to.equal(undefined)
  })

  it('says a working subscription that drops is news, reconnects, and is quiet about failed reconnects', async () => {
    endpoint.subscriptions = true
    const w = watch()
    await waitUntil('subscribed', () => w.subscribed)
    expect(changes).to.equal(1)
    endpoint.subscriptions = false
    endpoint.dropSubscribers()
    await waitUntil('a failed reconnect', () => w.failures >= 2)
    // The drop, news; the refused reconnects, not.
    expect(changes).to.equal(2)
    expect(w.lastError).to.equal('eth_subscribe refused: subscriptions are off')
    endpoint.subscriptions = true
    w.kick() // connected or waiting: a kick does not open a second socket
    await waitUntil('subscribed again', () => w.subscribed, { timeoutMs: 10_000 })
    expect(changes).to.equal(3)
  })
})
