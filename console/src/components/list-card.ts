import { html } from 'htm/preact'
import type { ComponentChildren } from 'preact'
import type { PagedList } from '../use-list'
import { PAGE_SIZE } from '../use-list'
import { ErrorNote } from './mono'
import { Pager } from './pager'

/**
 * A card holding one server-paged list: its title, the list's error, the rows (`data-testid` = `testid`), a note
 * when the page is empty, and the pager. The list views differ only in their rows.
 */
export function ListCard<T>({ title, testid, list, empty, row }: { title: string; testid: string; list: PagedList<T>; empty: ComponentChildren; row: (item: T) => ComponentChildren }) {
  return html`<section class="card">
    <h2>${title}</h2>
    <${ErrorNote} error=${list.error} />
    <ul class="rows" data-testid=${testid}>
      ${list.items.map(row)}
    </ul>
    ${list.loaded && list.items.length === 0 && !list.error ? html`<p class="muted">${empty}</p>` : null}
    <${Pager} skip=${list.skip} limit=${PAGE_SIZE} count=${list.items.length} onSkip=${list.setSkip} />
  </section>`
}
