import { html } from 'htm/preact'
import { useState } from 'preact/hooks'
import { DEFAULT_NAMESPACE, href } from './router'
import { ns, route, socketState, status } from './state'
import { Overview } from './views/overview'
import { Messages } from './views/messages'
import { MessagePage } from './views/message'
import { Events } from './views/events'
import { Datatypes } from './views/datatypes'
import { Groups } from './views/groups'
import { Batches } from './views/batches'
import { Subscriptions } from './views/subscriptions'
import { Send } from './views/send'

const NAV = [
  ['overview', '/', 'Overview'],
  ['messages', '/messages', 'Messages'],
  ['events', '/events', 'Events'],
  ['datatypes', '/datatypes', 'Datatypes'],
  ['groups', '/groups', 'Groups'],
  ['batches', '/batches', 'Batches'],
  ['subscriptions', '/subscriptions', 'Subscriptions'],
  ['send', '/send', 'Send'],
] as const

const SOCKET_LABEL = { open: 'live', connecting: 'connecting…', closed: 'offline, retrying' } as const

function View() {
  const [first, second] = route.value.segments
  switch (first) {
    case undefined:
      return html`<${Overview} />`
    case 'messages':
      return second ? html`<${MessagePage} id=${second} />` : html`<${Messages} />`
    case 'events':
      return html`<${Events} />`
    case 'datatypes':
      return html`<${Datatypes} />`
    case 'groups':
      return html`<${Groups} />`
    case 'batches':
      return html`<${Batches} />`
    case 'subscriptions':
      return html`<${Subscriptions} />`
    case 'send':
      return html`<${Send} />`
    default:
      return html`<section class="card"><h2>Not found</h2><p>No view called “${first}”. <a href=${href('/', ns.value)}>Overview</a></p></section>`
  }
}

/** Changes the namespace in the hash query, keeping the view. */
function NamespacePicker() {
  const [draft, setDraft] = useState(ns.value)
  const apply = (e: Event) => {
    e.preventDefault()
    const r = route.value
    const q = new URLSearchParams(r.query)
    const name = draft.trim() || DEFAULT_NAMESPACE
    if (name === DEFAULT_NAMESPACE) q.delete('ns')
    else q.set('ns', name)
    const qs = q.toString()
    location.hash = `#/${r.segments.map(encodeURIComponent).join('/')}${qs ? `?${qs}` : ''}`
  }
  return html`<form class="ns" onSubmit=${apply}>
    <label for="ns-input">Namespace</label>
    <input id="ns-input" data-testid="namespace" value=${draft} onInput=${(e: Event) => setDraft((e.target as HTMLInputElement).value)} size="10" />
  </form>`
}

export function App() {
  const current = route.value.segments[0] ?? 'overview'
  const state = socketState.value
  const s = status.value
  return html`<header class="top">
      <div class="brand">
        <span class="logo" aria-hidden="true"></span>
        <span>Parley</span>
        <span class="who" title=${s ? `${s.org.did} · ${s.node.did}` : ''}>${s ? `${s.org.name} · ${s.node.name}` : '…'}</span>
      </div>
      <${NamespacePicker} />
      <span class=${`live ${state}`} data-testid="ws-status" data-state=${state} role="status" title="The live event connection (WebSocket /ws)">
        <span class="dot" aria-hidden="true"></span>${SOCKET_LABEL[state]}
      </span>
    </header>
    <nav class="nav" aria-label="Views">
      ${NAV.map(
        ([id, path, label]) =>
          html`<a href=${href(path, ns.value)} data-testid=${`nav-${id}`} aria-current=${current === id || (id === 'overview' && current === '') ? 'page' : undefined}>${label}</a>`,
      )}
    </nav>
    <main class="main"><${View} /></main>`
}
