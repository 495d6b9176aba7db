import { html } from 'htm/preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { apiGet, errorText, nsPath } from '../api'
import { onEvent } from '../events'
import { Mono, StateBadge, ErrorNote } from '../components/mono'
import { bytes, prettyJson, time } from '../format'
import { href } from '../router'
import { ns, orgName } from '../state'
import type { ApiEvent, ApiMessage, MessageData, Trace } from '../types'
import { Timeline } from './timeline'

/**
 * Whether an event may move the message on: it names the message, or its transaction (its pin sent or read); while
 * it has no transaction yet, any transaction submitted may be its batch's.
 */
function concerns(e: ApiEvent, id: string, m: ApiMessage | undefined): boolean {
  if (e.reference === id || e.message?.header.id === id) return true
  return m?.txid !== undefined ? e.tx === m.txid : e.type === 'transaction_submitted'
}

/** A message decided here, with nothing it still waits for: no event will change its page. */
function settled(m: ApiMessage | undefined, t: Trace | undefined): boolean {
  return (m?.state === 'confirmed' || m?.state === 'rejected') && t !== undefined && t.waiting === undefined
}

/** `#/messages/<id>`: one message with its data values and its trace on this member, refreshed as it moves. */
export function MessagePage({ id }: { id: string }) {
  const [message, setMessage] = useState<ApiMessage | undefined>(undefined)
  const [trace, setTrace] = useState<Trace | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const namespace = ns.value
  const shown = useRef<{ m?: ApiMessage; t?: Trace }>({})

  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    shown.current = {}
    const load = async (): Promise<void> => {
      try {
        const [m, t] = await Promise.all([
          apiGet<ApiMessage>(nsPath(`/messages/${encodeURIComponent(id)}`), { fetchdata: true }),
          apiGet<Trace>(nsPath(`/messages/${encodeURIComponent(id)}/trace`)),
        ])
        if (!live) return
        shown.current = { m, t }
        setMessage(m)
        setTrace(t)
        setError(undefined)
        if (settled(m, t)) off()
      } catch (err) {
        if (live) setError(errorText(err))
      }
    }
    // Events about it (its confirmation, its transaction's submission, the chain's read of its pin) move it on: read
    // again, coalesced, until it is decided with nothing waiting.
    const off = onEvent(
      (e) => {
        if (timer !== undefined || !concerns(e, id, shown.current.m)) return
        timer = setTimeout(() => {
          timer = undefined
          void load()
        }, 300)
      },
      { chain: true },
    )
    void load()
    return () => {
      live = false
      off()
      clearTimeout(timer)
    }
  }, [id, namespace])

  if (!message) {
    return html`<section class="card" data-testid="message-detail" data-id=${id}><h2>Message <${Mono} value=${id} /></h2>
      ${error ? html`<${ErrorNote} error=${error} />` : html`<p class="muted">Loading…</p>`}</section>`
  }
  const h = message.header
  const chainTx = trace?.timeline.find((s) => s.chainTx)?.chainTx
  const block = trace?.timeline.find((s) => s.block !== undefined)?.block
  return html`<div class="grid" data-testid="message-detail" data-id=${h.id}>
    <section class="card wide" data-testid="message-header">
      <h2>Message <${StateBadge} state=${message.state} /></h2>
      <dl class="kvs">
        <div class="kv"><dt>ID</dt><dd><${Mono} value=${h.id} /></dd></div>
        <div class="kv"><dt>Type</dt><dd>${h.type}${h.txtype ? ` (${h.txtype})` : ''}</dd></div>
        <div class="kv"><dt>Author</dt><dd>${orgName(h.author)} <${Mono} value=${h.key} /></dd></div>
        <div class="kv"><dt>Topics</dt><dd>${h.topics.join(', ')}</dd></div>
        ${h.tag ? html`<div class="kv"><dt>Tag</dt><dd>${h.tag}</dd></div>` : null}
        ${h.group ? html`<div class="kv"><dt>Group</dt><dd><${Mono} value=${h.group} /></dd></div>` : null}
        <div class="kv"><dt>Created</dt><dd>${time(h.created)}</dd></div>
        ${message.confirmed ? html`<div class="kv"><dt>Confirmed</dt><dd>${time(message.confirmed)}</dd></div>` : null}
        ${message.rejectReason ? html`<div class="kv"><dt>Rejected</dt><dd class="error">${message.rejectReason}</dd></div>` : null}
        <div class="kv"><dt>Hash</dt><dd><${Mono} value=${message.hash} /></dd></div>
        <div class="kv"><dt>Data hash</dt><dd><${Mono} value=${h.datahash} /></dd></div>
      </dl>
    </section>
    <section class="card wide" data-testid="message-data">
      <h2>Data <span class="muted">(${message.data.length})</span></h2>
      ${message.data.map((d) => html`<${DataItem} key=${d.id} d=${d} />`)}
    </section>
    <section class="card" data-testid="message-pins">
      <h2>Pins</h2>
      ${message.pins && message.pins.length > 0 ? html`<ul class="plain">${message.pins.map((p) => html`<li><${Mono} value=${p} /></li>`)}</ul>` : html`<p class="muted">None yet.</p>`}
    </section>
    <section class="card" data-testid="message-batch">
      <h2>Batch</h2>
      ${message.batch ? html`<p><${Mono} value=${message.batch} /></p>` : html`<p class="muted">Not in a batch yet.</p>`}
    </section>
    <section class="card" data-testid="message-tx">
      <h2>Transaction</h2>
      <dl class="kvs">
        <div class="kv"><dt>ID</dt><dd><${Mono} value=${message.txid} /></dd></div>
        <div class="kv"><dt>Chain tx</dt><dd><${Mono} value=${chainTx} /></dd></div>
        <div class="kv"><dt>Block</dt><dd>${block ?? '—'}</dd></div>
      </dl>
    </section>
    <section class="card wide" data-testid="message-timeline">
      <h2>Timeline on ${trace?.org ?? 'this member'}</h2>
      ${trace ? html`<${Timeline} trace=${trace} />` : html`<p class="muted">No trace.</p>`}
    </section>
    <p class="wide"><a href=${href('/messages', ns.value)}>← All messages</a></p>
  </div>`
}

function DataItem({ d }: { d: MessageData }) {
  const blobUrl = nsPath(`/data/${encodeURIComponent(d.id)}/blob`)
  return html`<div class="data-item">
    <p class="meta">
      <${Mono} value=${d.id} />
      ${d.datatype ? html` <span class="badge">${d.datatype.name}/${d.datatype.version}</span>` : null}
      ${d.validator ? html` <span class="muted">${d.validator}</span>` : null}
    </p>
    ${d.value !== undefined && (d.value !== null || !d.blob) ? html`<pre>${prettyJson(d.value)}</pre>` : null}
    ${d.blob
      ? html`<p>Blob ${d.blob.name ? html`<strong>${d.blob.name}</strong>` : null} (${bytes(d.blob.size)})
          <a data-testid="blob-download" href=${blobUrl} download=${d.blob.name ?? d.id}>Download</a>
          <${Mono} value=${d.blob.hash} /></p>`
      : null}
  </div>`
}
