import { html } from 'htm/preact'
import { nsPath } from '../api'
import { ErrorNote, Mono } from '../components/mono'
import { Pager } from '../components/pager'
import { time } from '../format'
import { orgName } from '../state'
import type { Group } from '../types'
import { PAGE_SIZE, usePagedList } from '../use-list'

/** `#/groups`: the private groups this member is in (a member knows no others). */
export function Groups() {
  const list = usePagedList<Group>(nsPath('/groups'), {}, (e) => e.type === 'message_confirmed')
  return html`<section class="card">
    <h2>Groups</h2>
    <${ErrorNote} error=${list.error} />
    <ul class="rows" data-testid="group-list">
      ${list.items.map(
        (g) => html`<li class="row" data-testid="group-row" key=${g.hash}>
          <span class="cell"><${Mono} value=${g.hash} /></span>
          <span class="cell">${g.name || html`<span class="muted">unnamed</span>`}</span>
          <span class="cell">${g.members.map((m) => orgName(m.identity)).join(', ')}</span>
          <span class="cell muted">${time(g.created)}</span>
        </li>`,
      )}
    </ul>
    ${list.loaded && list.items.length === 0 ? html`<p class="muted">This member is in no group yet: a private send makes one.</p>` : null}
    <${Pager} skip=${list.skip} limit=${PAGE_SIZE} count=${list.items.length} onSkip=${list.setSkip} />
  </section>`
}
