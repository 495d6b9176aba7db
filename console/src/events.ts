import { effect } from '@preact/signals'
import { ns, socketState } from './state'
import type { ApiEvent } from './types'

/**
 * The console's one live connection: an ephemeral listener on the node's `/ws` for the shown namespace, with
 * `autoack` (the console only watches, so it never holds delivery back). It reconnects with a growing delay (capped)
 * when the node goes away, and starts again when the namespace changes. Views subscribe to the events it receives.
 */
type Listener = (e: ApiEvent) => void

const listeners = new Set<Listener>()
const MIN_DELAY_MS = 500
const MAX_DELAY_MS = 15_000

let socket: WebSocket | undefined
let delay = MIN_DELAY_MS
let retry: ReturnType<typeof setTimeout> | undefined

export function onEvent(fn: Listener): () => void {
  listeners.add(fn)
  return () => listeners.delete(fn)
}

function socketUrl(namespace: string): string {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
  return `${scheme}://${location.host}/ws?namespace=${encodeURIComponent(namespace)}&ephemeral&autoack`
}

function connect(namespace: string): void {
  clearTimeout(retry)
  socketState.value = 'connecting'
  const s = new WebSocket(socketUrl(namespace))
  socket = s
  s.onopen = () => {
    if (socket !== s) return
    delay = MIN_DELAY_MS
    socketState.value = 'open'
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
    if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { sequence?: unknown }).sequence !== 'number') return
    const event = parsed as ApiEvent
    for (const fn of [...listeners]) {
      try {
        fn(event)
      } catch (err) {
        // One view's mistake must not stop the others seeing the event.
        console.warn('event listener failed', err)
      }
    }
  }
  s.onclose = () => {
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
