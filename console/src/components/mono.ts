import { html } from 'htm/preact'

/**
 * An id, hash or key in monospace: cut short on screen by CSS (ellipsis), the whole value in the text (so copy and
 * search find it) and in the title. With `href`, a link.
 */
export function Mono({ value, href, testid }: { value: string | undefined; href?: string; testid?: string }) {
  if (!value) return html`<span class="muted">—</span>`
  return href
    ? html`<a class="mono" href=${href} title=${value} data-testid=${testid}>${value}</a>`
    : html`<span class="mono" title=${value} data-testid=${testid}>${value}</span>`
}

export function StateBadge({ state }: { state: string }) {
  return html`<span class=${`badge state-${state}`}>${state}</span>`
}

export function ErrorNote({ error }: { error: string | undefined }) {
  return error ? html`<p class="error" role="alert">${error}</p>` : null
}
