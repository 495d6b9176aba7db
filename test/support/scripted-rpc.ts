import { JsonRpcClient } from '../../node/chain/rpc.js'

/**
 * A JSON-RPC endpoint answered by a function, recording every call: the seam the chain modules (submitter, follower,
 * transactions) are unit-tested through. The answer may throw, as the real client does (an RpcError).
 */
export class ScriptedRpc extends JsonRpcClient {
  readonly calls: string[] = []
  readonly params: unknown[][] = []
  constructor(private readonly answer: (method: string, params: unknown[]) => unknown) {
    super('http://127.0.0.1:1')
  }
  override async call<T>(method: string, params: unknown[] = []): Promise<T> {
    this.calls.push(method)
    this.params.push(params)
    return this.answer(method, params) as T
  }
}

export const countCalls = (calls: readonly string[], method: string): number => calls.filter((m) => m === method).length
