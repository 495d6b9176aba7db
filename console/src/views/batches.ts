import { html } from 'htm/preact'
import { nsPath } from '../api'
import { ErrorNote, Mono, StateBadge } from '../components/mono'
import { Pager } from '../components/pager'
import { time } from '../format'
import { orgName } from '../state'
import type { Batch } from '../types'
import { PAGE_SIZE, usePagedList } from '../use-list'

/** `#/batches`: the batches this member sealed or received, newest first. */
export function Batches() {
  const list = usePagedList<Batch>(nsPath('/batches'), {})
  return html`<section class="card">
    <h2>Batches</h2>
    <${ErrorNote} error=${list.error} />
    <ul class="rows" data-testid="batch-list">
      ${list.items.map(
        (b) => html`<li class="row" data-testid="batch-row" key=${b.id}>
          <span class="cell"><${Mono} value=${b.id} /></span>
          <span class="cell">${b.type}</span>
          <span class="cell"><${StateBadge} state=${b.state} /></span>
          <span class="cell" title=${b.author}>${orgName(b.author)}</span>
          <span class="cell">${b.manifest.messages?.length ?? 0} msg</span>
          <span class="cell"><${Mono} value=${b.payloadRef} /></span>
          <span class="cell muted">${time(b.created)}</span>
        </li>`,
      )}
    </ul>
    ${list.loaded && list.items.length === 0 ? html`<p class="muted">No batches yet.</p>` : null}
    <${Pager} skip=${list.skip} limit=${PAGE_SIZE} count=${list.items.length} onSkip=${list.setSkip} />
  </section>`
}
