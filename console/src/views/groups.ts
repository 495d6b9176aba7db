import { html } from 'htm/preact'
import { nsPath } from '../api'
import { ListCard } from '../components/list-card'
import { Mono } from '../components/mono'
import { time } from '../format'
import { orgName } from '../state'
import type { Group } from '../types'
import { usePagedList } from '../use-list'

/** `#/groups`: the private groups this member is in (a member knows no others). */
export function Groups() {
  const list = usePagedList<Group>(nsPath('/groups'), {}, (e) => e.type === 'message_confirmed')
  return html`<${ListCard}
    title="Groups"
    testid="group-list"
    list=${list}
    empty="This member is in no group yet: a private send makes one."
    row=${(g: Group) => html`<li class="row" data-testid="group-row" key=${g.hash}>
          <span class="cell"><${Mono} value=${g.hash} /></span>
          <span class="cell">${g.name || html`<span class="muted">unnamed</span>`}</span>
          <span class="cell">${g.members.map((m) => orgName(m.identity)).join(', ')}</span>
          <span class="cell muted">${time(g.created)}</span>
        </li>`}
  />`
}
