import { effect } from '@preact/signals'
import { ns, socketState } from './state'
import type { ApiEvent } from './types'

/**
 * The console's one live connection to the node's `/ws`, with `autoack` (the console only watches, so it never holds
 * delivery back) and two ephemeral listeners on it: every event of the shown namespace (started by the URL's query),
 * and the chain's `blockchain_event_received` events, which the node writes in the system namespace `svc_system`
 * (a BatchPin log names no namespace), started by a second `start` frame once the socket is open. It reconnects with
 * a growing delay (capped) when the node goes away, and starts again when the namespace changes. Views subscribe to
 * the events it receives: by default only the shown namespace's, the chain's too when they ask for them.
 */
type Listener = (e: ApiEvent) => void

/** Where the node writes the events of the chain (node/model/system.ts). */
export const SYSTEM_NAMESPACE = 'svc_system'
export const CHAIN_EVENT = 'blockchain_event_received'

const listeners = new Map<Listener, { chain: boolean }>()
const MIN_DELAY_MS = 500
const MAX_DELAY_MS = 15_000
/** A connection counts as good (the delay starts again from the minimum) once it has stayed open this long. */
const STABLE_MS = 5_000

let socket: WebSocket | undefined
let delay = MIN_DELAY_MS
let retry: ReturnType<typeof setTimeout> | undefined

/**
 * Calls `fn` with each event of the shown namespace and, with `chain: true`, each `blockchain_event_received` too
 * (namespace `svc_system`). Answers the unsubscribe.
 */
export function onEvent(fn: Listener, opts: { chain?: boolean } = {}): () => void {
  listeners.set(fn, { chain: opts.chain ?? false })
  return () => listeners.delete(fn)
}

function socketUrl(namespace: string): string {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
  return `${scheme}://${location.host}/ws?namespace=${encodeURIComponent(namespace)}&ephemeral&autoack`
}

/** The frame's event, if it is one with the fields the console relies on (anything else is ignored). */
export function asEvent(frame: unknown): ApiEvent | undefined {
  if (typeof frame !== 'object' || frame === null) return undefined
  const e = frame as Record<string, unknown>
  const ok =
    typeof e.sequence === 'number' &&
    typeof e.id === 'string' &&
    typeof e.type === 'string' &&
    typeof e.namespace === 'string' &&
    typeof e.reference === 'string' &&
    (e.tx === undefined || typeof e.tx === 'string') &&
    (e.message === undefined || (typeof e.message === 'object' && e.message !== null && typeof (e.message as { header?: unknown }).header === 'object'))
  return ok ? (frame as ApiEvent) : undefined
}

function connect(namespace: string): void {
  clearTimeout(retry)
  socketState.value = 'connecting'
  const s = new WebSocket(socketUrl(namespace))
  socket = s
  let stable: ReturnType<typeof setTimeout> | undefined
  s.onopen = () => {
    if (socket !== s) return
    socketState.value = 'open'
    // A server that accepts and then closes must not be asked again every MIN_DELAY_MS forever: the delay starts
    // again only once this connection has proved itself (stayed open, or delivered an event).
    stable = setTimeout(() => (delay = MIN_DELAY_MS), STABLE_MS)
    if (namespace !== SYSTEM_NAMESPACE) {
      s.send(JSON.stringify({ type: 'start', namespace: SYSTEM_NAMESPACE, ephemeral: true, autoack: true, filter: { events: CHAIN_EVENT } }))
    }
  }
  s.onmessage = (frame) => {
    if (socket !== s || typeof frame.data !== 'string') return
    let parsed: unknown
    try {
      parsed = JSON.parse(frame.data)
    } catch {
      return
    }
    // Events carry a sequence; anything else (a protocol_error) is the server explaining a close that follows.
    const event = asEvent(parsed)
    if (!event) return
    delay = MIN_DELAY_MS
    const chain = event.namespace !== namespace
    for (const [fn, opts] of [...listeners]) {
      if (chain && !opts.chain) continue
      try {
        fn(event)
      } catch (err) {
        // One view's mistake must not stop the others seeing the event.
        console.warn('event listener failed', err)
      }
    }
  }
  s.onclose = () => {
    clearTimeout(stable)
    if (socket !== s) return
    socketState.value = 'closed'
    retry = setTimeout(() => connect(namespace), delay)
    delay = Math.min(delay * 2, MAX_DELAY_MS)
  }
}

/** Starts following the shown namespace (again whenever it changes). */
export function startEvents(): void {
  effect(() => {
    const namespace = ns.value
    const old = socket
    socket = undefined
    old?.close()
    delay = MIN_DELAY_MS
    connect(namespace)
  })
}
