import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { parsePaging, single } from '../query.js'
import { parseFilter } from '../filters.js'
import { parseUuid } from '../../core/ids.js'
import { type StoredBlockchainEvent } from '../../model/index.js'

/** The BatchPin logs this node has read, newest first, in FireFly's blockchain event shape. */
export function blockchainEventRoutes(r: ApiRouter<NodeServices>): void {
  r.get('/blockchainevents', (ctx, s, ns, q) => {
    const paging = parsePaging(q)
    const batchParam = single(q, 'batch')
    const batch = batchParam !== undefined ? parseUuid(batchParam, 'batch') : undefined
    // `batch` (the events that pinned one batch) is this route's own parameter, not one of FireFly's filter fields.
    const filter = parseFilter(q, ['batch'])
    ctx.body = s.query.blockchainEvents.list({ ...paging, ...(batch ? { batchId: batch } : {}), ...(filter ? { filter } : {}) }).map((e) => present(e, ns, s.config.chain.contract))
  })
}

function present(e: StoredBlockchainEvent, ns: string, contract: string) {
  return {
    id: e.id,
    sequence: e.seq,
    source: 'ethereum',
    namespace: ns,
    name: 'BatchPin',
    protocolId: e.protocolId,
    output: {
      author: e.author,
      timestamp: String(e.timestamp),
      action: e.action,
      uuids: '0x' + e.txId.replace(/-/g, '') + e.batchId.replace(/-/g, ''),
      batchHash: '0x' + e.batchHash,
      payloadRef: e.payloadRef,
      contexts: e.contexts.map((c) => '0x' + c),
    },
    info: {
      address: contract,
      blockNumber: String(e.blockNumber),
      transactionIndex: '0x' + e.txIndex.toString(16),
      logIndex: String(e.logIndex),
      transactionHash: e.txHash,
      signature: 'BatchPin(address,uint256,string,bytes32,bytes32,string,bytes32[])',
    },
    timestamp: e.received,
    tx: { type: 'batch_pin', id: e.txId, blockchainId: e.txHash },
    batch: e.batchId,
  }
}
