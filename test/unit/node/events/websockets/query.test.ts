import { expect } from 'chai'
import { eventSocketPath, invalidNamespace, validNamespace } from '../../../../../node/events/websockets/paths.js'
import { startFromQuery } from '../../../../../node/events/websockets/query.js'

const query = (q: string) => startFromQuery(new URLSearchParams(q))

describe("event socket: a start from the connection's query, and the socket's path", () => {
  it('starts nothing without ephemeral or name', () => {
    expect(query('namespace=default&autoack')).to.equal(undefined)
    expect(query('ephemeral=false&namespace=default')).to.equal(undefined)
  })

  it('reads flags bare or with any value but false, and the options FireFly clients send', () => {
    expect(query('ephemeral&namespace=default&autoack=FALSE&batch&readahead=50&batchtimeout=250ms')).to.deep.equal({
      type: 'start',
      namespace: 'default',
      ephemeral: true,
      autoack: false,
      options: { readAhead: 50, batch: true, batchTimeout: '250ms' },
    })
    // A read-ahead that is not a number is passed on as given, for the start's own check to refuse.
    expect(query('name=app&readahead=lots&batch=false')).to.deep.equal({ type: 'start', name: 'app', ephemeral: false, options: { readAhead: 'lots', batch: false } })
    expect(query('name=app&changeevents=true')).to.deep.equal({ type: 'start', name: 'app', ephemeral: false })
  })

  it('serves /ws and a namespace\'s ws, decoding the namespace, keeping one it cannot decode as sent', () => {
    expect(eventSocketPath('/ws/')).to.deep.equal({ namespace: undefined })
    expect(eventSocketPath('/api/v1/namespaces/ns%31/ws')).to.deep.equal({ namespace: 'ns1' })
    expect(eventSocketPath('/api/v1/namespaces/%E0%A4%A/ws')).to.deep.equal({ namespace: '%E0%A4%A' })
    expect(eventSocketPath('/api/v1/ws')).to.equal(undefined)
    expect(validNamespace('%E0%A4%A')).to.equal(false)
    expect(invalidNamespace('x'.repeat(200)).message).to.equal(`namespace must be 1-64 letters, digits, '.', '_' or '-' and start and end alphanumeric: "${'x'.repeat(79)}`)
  })
})
