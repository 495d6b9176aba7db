import { CID } from 'multiformats/cid'
import { errorMessage } from '../core/errors.js'
import type { SharedStorage, SharedStorageStatus } from './shared-storage.js'
import { kuboAdd, kuboApiUrl } from './kubo-add.js'
import { Backoff } from '../core/backoff.js'
import { streamGet, type HttpStatusError } from './ipfs-http.js'
import { httpCall, httpModule } from '../core/http-call.js'

const PROBE_TIMEOUT_MS = 2000
const RETRY_MIN_MS = 250
const RETRY_MAX_MS = 5000

/**
 * Shared storage over IPFS: uploads through the Kubo RPC API (streamed) with Kubo's `add` defaults (so the CID any Kubo
 * would compute for the same bytes), downloads through the gateway, as FireFly does.
 */
export function createIpfsStorage(opts: {
  api: string
  gateway: string
  log: (line: string) => void
  /** How long a probe waits for the API's answer (default 2 s); a test passes milliseconds. */
  probeTimeoutMs?: number
}): SharedStorage {
  const probeTimeoutMs = opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS
  // Batches and blobs are fetched one after another from the same gateway: its connections are kept open.
  const gatewayAgent = new (httpModule(new URL(opts.gateway)).Agent)({ keepAlive: true })
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)

  async function probe(): Promise<SharedStorageStatus> {
    try {
      // A probe, like kubo-rpc-client's version() it replaces: one connection per call (node/core/http-call.ts).
      const res = await httpCall(kuboApiUrl(opts.api, 'version').href, { method: 'POST', timeoutMs: probeTimeoutMs })
      if (res.status !== 200) throw new Error(`/api/v0/version answered ${res.status}: ${res.body.slice(0, 300)}`)
      const v = JSON.parse(res.body) as { Version?: unknown }
      return { connected: true, api: opts.api, gateway: opts.gateway, ...(typeof v.Version === 'string' ? { version: v.Version } : {}) }
    } catch (err) {
      const why = (err as Error).name === 'TimeoutError' ? `no answer within ${probeTimeoutMs} ms` : errorMessage(err)
      return { connected: false, api: opts.api, gateway: opts.gateway, error: `cannot reach IPFS API ${opts.api}: ${why}` }
    }
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
    upload(content, name = 'file.bin') {
      return kuboAdd(opts.api, content, name, { 'cid-version': '0', 'raw-leaves': 'false', pin: 'true' })
    },
    async *download(ref, signal) {
      const cid = CID.parse(ref).toString()
      try {
        yield* streamGet(`${opts.gateway}/ipfs/${cid}`, { agent: gatewayAgent, ...(signal ? { signal } : {}) })
      } catch (err) {
        if (signal?.aborted) throw err
        const status = (err as Partial<HttpStatusError>).status
        if (status !== undefined) throw new Error(`ipfs gateway ${opts.gateway} answered ${status} for ${cid}`)
        throw new Error(`cannot reach IPFS gateway ${opts.gateway}: ${errorMessage(err)}`, { cause: err })
      }
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
      gatewayAgent.destroy()
    },
  }
}
