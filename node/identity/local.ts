import { nodeDid, orgDid } from '../messaging/model.js'

/** Who this node is: the org it signs for and its own node identity. */
export interface LocalIdentity {
  org: string
  node: string
  orgDid: string
  nodeDid: string
  /** The org's signing address, lowercase. */
  key: string
}

export function localIdentity(org: string, node: string, key: string): LocalIdentity {
  return { org, node, orgDid: orgDid(org), nodeDid: nodeDid(node), key: key.toLowerCase() }
}
