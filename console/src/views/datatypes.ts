import { html } from 'htm/preact'
import { nsPath } from '../api'
import { ListCard } from '../components/list-card'
import { Mono } from '../components/mono'
import { prettyJson, time } from '../format'
import type { Datatype } from '../types'
import { usePagedList } from '../use-list'

/** `#/datatypes`: the confirmed datatypes of the namespace, each with its JSON Schema. */
export function Datatypes() {
  const list = usePagedList<Datatype>(nsPath('/datatypes'), {}, (e) => e.type === 'datatype_confirmed')
  return html`<${ListCard}
    title="Datatypes"
    testid="datatype-list"
    list=${list}
    empty="No datatypes defined yet (define one on the Send page)."
    row=${(d: Datatype) => html`<li class="row block" data-testid="datatype-row" key=${d.id}>
          <div class="row-head"><strong>${d.name}</strong> <span class="badge">${d.version}</span> <span class="muted">${time(d.created)}</span> <${Mono} value=${d.hash} /></div>
          <details><summary>Schema</summary><pre>${prettyJson(d.value)}</pre></details>
        </li>`}
  />`
}
