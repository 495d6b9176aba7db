import { expect } from 'chai'
import { rogueLine, type PinSent } from '../../../../network/rogue/results.js'

describe('network/rogue/results: each attack in one line', () => {
  const pin: PinSent = { signedWith: 'Hardhat account #15', signer: '0xcd3b', txId: 't1', batchId: 'b1', batchHash: 'ab'.repeat(32), payloadRef: 'QmX', contexts: ['c1'], txHash: '0xtx', block: 7 }

  it('names the ids, the transaction and whose key signed it', () => {
    expect(rogueLine({ attack: 'garbage-pin', topic: 'orders', pin })).to.equal('pinned garbage batch b1 on topic orders: tx 0xtx from 0xcd3b (Hardhat account #15) in block 7')
    const { block: _mined, ...pending } = pin
    expect(rogueLine({ attack: 'squat-pin', victim: { txHash: '0xv', signer: '0xa' }, pin: pending })).to.equal(
      'pinned batch b1 first, with hash abababababab…, 1 context(s) and payload ref "QmX": tx 0xtx from 0xcd3b (Hardhat account #15), waiting in the pool; ahead of 0xv from 0xa',
    )
    expect(rogueLine({ attack: 'claim-name', name: 'org3', did: 'did:firefly:org/org3', claim: 'm1', pin })).to.match(/^claimed the org name org3 \(did:firefly:org\/org3, message m1\): tx 0xtx/)
  })

  it('says what each peer made of a delivery', () => {
    expect(rogueLine({ attack: 'reuse-id', message: 'm1', hash: 'ab'.repeat(32), batchId: 'b1', group: 'g1', deliveries: [{ to: 'org0', stored: true }], pin })).to.match(
      /^pinned a message of its own \(hash abababababab…\) under message id m1 in batch b1, delivered first: org0 stored it; tx 0xtx/,
    )
    expect(rogueLine({ attack: 'reuse-id', message: 'm1', hash: 'ab'.repeat(32), batchId: 'b1', group: 'g1', data: { id: 'd1', datatype: { name: 'nosuch', version: '1' } }, deliveries: [{ to: 'org0', stored: true }], pin })).to.match(
      /^pinned a message of its own \(hash abababababab…\) carrying data d1 of message m1 with datatype nosuch\/1, in batch b1, delivered first: org0 stored it; tx 0xtx/,
    )
    expect(rogueLine({ attack: 'deliver-under', batchId: 'b1', group: 'g1', messages: ['m1', 'm2'], delivery: { to: 'org0', stored: false, refusal: '400 BAD_PEER_DATA: no' } })).to.equal(
      'delivered a private batch of its own (group g1, message m1, m2) under batch id b1: org0 refused it: 400 BAD_PEER_DATA: no',
    )
    const fg = rogueLine({
      attack: 'foreign-group',
      group: 'g1',
      namespace: 'default',
      members: [],
      paired: { org: 'org2', node: 'node1' },
      groupinit: 'm1',
      deliveries: [{ to: 'org0', stored: true }, { to: 'org2', stored: false, refusal: 'no' }],
      pin,
    })
    expect(fg).to.match(/^pinned group g1 pairing org2 with node1 \(groupinit m1\): org0 stored it; org2 refused it: no; tx 0xtx/)
    expect(rogueLine({ attack: 'flood-blobs', to: 'org0', blobs: 3, bytesEach: 10, stored: 2, refused: 1, refusal: 'quota', hashes: [] })).to.equal(
      'put 3 blob(s) of 10 bytes nothing refers to at org0: 2 stored, 1 refused (first: quota)',
    )
    expect(rogueLine({ attack: 'flood-batches', to: 'org0', batches: 8, bytesEach: 30, stored: 8, refused: 0, ids: [] })).to.equal(
      'delivered 8 private batch(es) with a value of 30 bytes, never pinned, to org0: 8 stored, 0 refused',
    )
    const repin = rogueLine({ attack: 'repin-private', batchId: 'b1', group: 'g1', namespace: 'ns', message: 'm1', heldFirst: ['org0'], deliveries: [{ to: 'org0', stored: true }, { to: 'org1', stored: true }], privatePin: pin, broadcastPin: pin })
    expect(repin).to.match(/^pinned private batch b1 \(group g1, message m1\) as it is, tx 0xtx.*again as a broadcast of a payload that is no batch, tx 0xtx.*delivered first to org0, the rest after their refusal: org0 stored it; org1 stored it$/)
  })

  it('says when it delivered to nobody, published instead, or met no refusal', () => {
    expect(rogueLine({ attack: 'reuse-id', message: 'm1', hash: 'cd'.repeat(32), batchId: 'b1', deliveries: [], pin })).to.equal(
      'pinned a message of its own (hash cdcdcdcdcdcd…) under message id m1 in batch b1, published to shared storage; tx 0xtx from 0xcd3b (Hardhat account #15) in block 7',
    )
    expect(rogueLine({ attack: 'reuse-id', message: 'm1', hash: 'cd'.repeat(32), batchId: 'b1', group: 'g1', deliveries: [], pin })).to.contain(', delivered first: to nobody; ')
    const withData = { attack: 'reuse-id', message: 'm1', hash: 'cd'.repeat(32), batchId: 'b1', data: { id: 'd1', datatype: { name: 'dt', version: '2' } }, pin } as const
    expect(rogueLine({ ...withData, deliveries: [] })).to.contain('with datatype dt/2, in batch b1, published to shared storage; ')
    expect(rogueLine({ ...withData, group: 'g1', deliveries: [] })).to.contain('with datatype dt/2, in batch b1, delivered first: to nobody; ')
    expect(rogueLine({ attack: 'foreign-group', group: 'g1', namespace: 'default', members: [], paired: { org: 'org2', node: 'node1' }, groupinit: 'm1', deliveries: [], pin })).to.contain(
      '(groupinit m1): delivered to nobody; tx 0xtx',
    )
    expect(rogueLine({ attack: 'flood-blobs', to: 'org0', blobs: 2, bytesEach: 10, stored: 2, refused: 0, hashes: [] })).to.equal('put 2 blob(s) of 10 bytes nothing refers to at org0: 2 stored, 0 refused')
    expect(rogueLine({ attack: 'flood-batches', to: 'org0', batches: 2, bytesEach: 30, stored: 0, refused: 2, refusal: 'quota', ids: [] })).to.equal(
      'delivered 2 private batch(es) with a value of 30 bytes, never pinned, to org0: 0 stored, 2 refused (first: quota)',
    )
    expect(rogueLine({ attack: 'squat-pin', pin })).to.match(/in block 7$/)
    const repin = rogueLine({ attack: 'repin-private', batchId: 'b1', group: 'g1', namespace: 'ns', message: 'm1', heldFirst: [], deliveries: [{ to: 'org0', stored: false, refusal: 'no' }], privatePin: pin, broadcastPin: pin })
    expect(repin).to.match(/; delivered after every member refused that payload: org0 refused it: no$/)
  })
})
