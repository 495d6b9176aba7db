import { html } from 'htm/preact'
import { nsPath } from '../api'
import { ListCard } from '../components/list-card'
import { Mono, StateBadge } from '../components/mono'
import { time } from '../format'
import { orgName } from '../state'
import type { Batch } from '../types'
import { usePagedList } from '../use-list'

/** `#/batches`: the batches this member sealed or received, newest first. */
export function Batches() {
  const list = usePagedList<Batch>(nsPath('/batches'), {})
  return html`<${ListCard}
    title="Batches"
    testid="batch-list"
    list=${list}
    empty="No batches yet."
    row=${(b: Batch) => html`<li class="row" data-testid="batch-row" key=${b.id}>
          <span class="cell"><${Mono} value=${b.id} /></span>
          <span class="cell">${b.type}</span>
          <span class="cell"><${StateBadge} state=${b.state} /></span>
          <span class="cell" title=${b.author}>${orgName(b.author)}</span>
          <span class="cell">${b.manifest.messages?.length ?? 0} msg</span>
          <span class="cell"><${Mono} value=${b.payloadRef} /></span>
          <span class="cell muted">${time(b.created)}</span>
        </li>`}
  />`
}
