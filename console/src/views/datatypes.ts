import { html } from 'htm/preact'
import { nsPath } from '../api'
import { ErrorNote, Mono } from '../components/mono'
import { Pager } from '../components/pager'
import { prettyJson, time } from '../format'
import type { Datatype } from '../types'
import { PAGE_SIZE, usePagedList } from '../use-list'

/** `#/datatypes`: the confirmed datatypes of the namespace, each with its JSON Schema. */
export function Datatypes() {
  const list = usePagedList<Datatype>(nsPath('/datatypes'), {}, (e) => e.type === 'datatype_confirmed')
  return html`<section class="card">
    <h2>Datatypes</h2>
    <${ErrorNote} error=${list.error} />
    <ul class="rows" data-testid="datatype-list">
      ${list.items.map(
        (d) => html`<li class="row block" data-testid="datatype-row" key=${d.id}>
          <div class="row-head"><strong>${d.name}</strong> <span class="badge">${d.version}</span> <span class="muted">${time(d.created)}</span> <${Mono} value=${d.hash} /></div>
          <details><summary>Schema</summary><pre>${prettyJson(d.value)}</pre></details>
        </li>`,
      )}
    </ul>
    ${list.loaded && list.items.length === 0 ? html`<p class="muted">No datatypes defined yet (define one on the Send page).</p>` : null}
    <${Pager} skip=${list.skip} limit=${PAGE_SIZE} count=${list.items.length} onSkip=${list.setSkip} />
  </section>`
}
