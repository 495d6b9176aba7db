import { create, type KuboRPCClient } from 'kubo-rpc-client'
import { CID } from 'multiformats/cid'
import { errorMessage } from '../core/errors.js'
import type { SharedStorage, SharedStorageStatus } from './shared-storage.js'
import { kuboAdd } from './kubo-add.js'
import { Backoff } from '../core/backoff.js'

const PROBE_TIMEOUT_MS = 2000
const RETRY_MIN_MS = 250
const RETRY_MAX_MS = 5000

/**
 * Shared storage over IPFS: uploads through the Kubo RPC API (streamed) with Kubo's `add` defaults (so the CID any Kubo
 * would compute for the same bytes), downloads through the gateway, as FireFly does.
 */
export function createIpfsStorage(opts: { api: string; gateway: string; log: (line: string) => void }): SharedStorage {
  const client: KuboRPCClient = create({ url: `${opts.api}/api/v0` })
  let last: SharedStorageStatus = { connected: false, api: opts.api, gateway: opts.gateway }
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)

  async function probe(): Promise<SharedStorageStatus> {
    try {
      const v = await client.version({ signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
      last = { connected: true, api: opts.api, gateway: opts.gateway, version: v.version }
    } catch (err) {
      last = { connected: false, api: opts.api, gateway: opts.gateway, error: `cannot reach IPFS API ${opts.api}: ${fetchFailure(err)}` }
    }
    return last
  }

  // Until the endpoint first answers, retry with backoff; after that, failures surface on the calls themselves.
  async function watch(): Promise<void> {
    if (stopped) return
    const s = await probe()
    // stop() may have come while the probe was in flight: nothing more is logged or scheduled after it.
    if (stopped) return
    if (s.connected) {
      if (backoff.retrying) opts.log(`ipfs: connected to ${opts.api} (${s.version ?? 'unknown version'})`)
      backoff.reset()
      return
    }
    if (backoff.failed(s.error ?? 'unreachable')) opts.log(`ipfs: ${s.error}; retrying`)
    timer = setTimeout(() => void watch(), backoff.next())
  }

  return {
    start() {
      void watch()
    },
    async upload(content, name = 'file.bin') {
      const cid = await kuboAdd(opts.api, content, name, { 'cid-version': '0', 'raw-leaves': 'false', pin: 'true' })
      last = { ...last, connected: true, error: undefined }
      return cid
    },
    async *download(ref, signal) {
      const cid = CID.parse(ref).toString()
      let res: Response
      try {
        res = await fetch(`${opts.gateway}/ipfs/${cid}`, signal ? { signal } : {})
      } catch (err) {
        if (signal?.aborted) throw err
        throw new Error(`cannot reach IPFS gateway ${opts.gateway}: ${fetchFailure(err)}`, { cause: err })
      }
      if (!res.ok || !res.body) {
        throw new Error(`ipfs gateway ${opts.gateway} answered ${res.status} for ${cid}`)
      }
      for await (const chunk of res.body) yield chunk as Uint8Array
    },
    validRef(ref) {
      try {
        CID.parse(ref)
        return true
      } catch {
        return false
      }
    },
    probe,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}

/** fetch() says only "fetch failed"; the reason (ECONNREFUSED, a reset) is in its cause. */
function fetchFailure(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause
  const why = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : undefined
  return why ? `${errorMessage(err)} (${why})` : errorMessage(err)
}
