import { html } from 'htm/preact'

/** Previous / next page of a server-paged list; `more` is whether the last page came back full. */
export function Pager({ skip, limit, count, onSkip }: { skip: number; limit: number; count: number; onSkip: (skip: number) => void }) {
  return html`<div class="pager">
    <button type="button" data-testid="page-prev" disabled=${skip === 0} onClick=${() => onSkip(Math.max(0, skip - limit))}>← Newer</button>
    <span class="muted">${count === 0 ? 'none' : `${skip + 1}–${skip + count}`}</span>
    <button type="button" data-testid="page-next" disabled=${count < limit} onClick=${() => onSkip(skip + limit)}>Older →</button>
  </div>`
}
