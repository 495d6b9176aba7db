import { html } from 'htm/preact'
import { useEffect, useState } from 'preact/hooks'
import { apiGetList, errorText, nsPathOf } from '../api'
import { CHAIN_EVENT, onEvent, SYSTEM_NAMESPACE } from '../events'
import { ErrorNote, Mono } from '../components/mono'
import { clock } from '../format'
import { href } from '../router'
import { ns } from '../state'
import type { ApiEvent } from '../types'

const TYPES = ['message_confirmed', 'message_rejected', 'identity_confirmed', 'datatype_confirmed', 'transaction_submitted', CHAIN_EVENT]
/** The stream keeps this many rows; older ones are a page away in the API. */
const KEEP = 200
const FIRST_PAGE = 50

/**
 * `#/events`: the newest events, then each new one as the socket delivers it, optionally of one type. The chain's
 * `blockchain_event_received` events live in the system namespace (`svc_system`), so filtering on that type reads
 * and follows that namespace's. Only the newest page is live: an older page stays as the API answered it.
 */
export function Events() {
  const [type, setType] = useState('')
  const [rows, setRows] = useState<ApiEvent[]>([])
  const [error, setError] = useState<string | undefined>(undefined)
  const [older, setOlder] = useState(0)
  const namespace = ns.value
  const source = type === CHAIN_EVENT ? SYSTEM_NAMESPACE : namespace

  // Another type or namespace starts from the newest page.
  useEffect(() => setOlder(0), [type, namespace])

  useEffect(() => {
    let live = true
    setRows([])
    // Events that arrive while the first page loads are merged in by sequence, never shown twice.
    const merge = (incoming: ApiEvent[]) =>
      setRows((have) => {
        const seen = new Set(have.map((e) => e.sequence))
        return [...have, ...incoming.filter((e) => !seen.has(e.sequence))].sort((a, b) => b.sequence - a.sequence).slice(0, KEEP)
      })
    const off =
      older === 0
        ? onEvent(
            (e) => {
              if (e.namespace === source && (!type || e.type === type)) merge([e])
            },
            { chain: source === SYSTEM_NAMESPACE },
          )
        : () => {}
    apiGetList<ApiEvent>(nsPathOf(source, '/events'), { type: type || undefined, limit: FIRST_PAGE, skip: older, fetchreferences: true })
      .then((page) => live && (merge(page), setError(undefined)))
      .catch((err: unknown) => live && setError(errorText(err)))
    return () => {
      live = false
      off()
    }
  }, [type, source, older])

  return html`<section class="card">
    <h2>Events <span class="muted small">${older === 0 ? 'live' : 'older page'}${source !== namespace ? ` · ${source}` : ''}</span></h2>
    <div class="filters">
      <label><span>Type</span>
        <select data-testid="filter-event-type" value=${type} onChange=${(e: Event) => (setOlder(0), setType((e.target as HTMLSelectElement).value))}>
          <option value="">all types</option>
          ${TYPES.map((t) => html`<option value=${t}>${t}</option>`)}
        </select>
      </label>
    </div>
    <${ErrorNote} error=${error} />
    <ul class="rows" data-testid="event-stream" aria-live="polite">
      ${rows.map((e) => html`<${EventRow} key=${e.sequence} e=${e} />`)}
    </ul>
    ${rows.length === 0 && !error ? html`<p class="muted">No events yet: they appear here as they happen.</p>` : null}
    <div class="pager">
      <button type="button" disabled=${older === 0} onClick=${() => setOlder(Math.max(0, older - FIRST_PAGE))}>← Newer</button>
      <button type="button" disabled=${rows.length < FIRST_PAGE} onClick=${() => setOlder(older + FIRST_PAGE)}>Older →</button>
    </div>
  </section>`
}

function EventRow({ e }: { e: ApiEvent }) {
  const isMessage = e.type.startsWith('message_')
  return html`<li class="row" data-testid="event-row" data-type=${e.type} data-reference=${e.reference}>
    <span class="cell mono">#${e.sequence}</span>
    <span class=${`cell badge ev-${e.type}`}>${e.type}</span>
    <span class="cell muted">${clock(e.created)}</span>
    <span class="cell clip">${e.topic ?? ''}</span>
    <span class="cell">${isMessage ? html`<${Mono} value=${e.reference} href=${href(`/messages/${e.reference}`, ns.value)} />` : html`<${Mono} value=${e.reference} />`}</span>
  </li>`
}
