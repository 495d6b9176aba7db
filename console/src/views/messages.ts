import { html } from 'htm/preact'
import { useEffect, useState } from 'preact/hooks'
import { nsPath, type Params } from '../api'
import { Mono, StateBadge, ErrorNote } from '../components/mono'
import { Pager } from '../components/pager'
import { time } from '../format'
import { href } from '../router'
import { ns, orgName } from '../state'
import type { ApiMessage, MessageState, MessageType } from '../types'
import { PAGE_SIZE, usePagedList } from '../use-list'

const FILTERS = [
  ['type', 'Type'],
  ['topic', 'Topic'],
  ['tag', 'Tag'],
  ['author', 'Author'],
  ['group', 'Group'],
  ['state', 'State'],
] as const
type FilterName = (typeof FILTERS)[number][0]
type Filters = Record<FilterName, string>
const EMPTY: Filters = { type: '', topic: '', tag: '', author: '', group: '', state: '' }
/** Every state and type of the model (node/model/message-kinds.ts), checked by the compiler both ways. */
const STATES: Record<MessageState, true> = { ready: true, pending: true, confirmed: true, rejected: true }
const TYPES: Record<MessageType, true> = { broadcast: true, private: true, definition: true, groupinit: true }
const CHOICES: Partial<Record<FilterName, string[]>> = {
  type: Object.keys(TYPES),
  state: Object.keys(STATES),
}

/**
 * The API's `topics` field compares the comma-joined list, so a bare value matches only messages whose topics are
 * exactly it. Membership is the OR group (a repeated field, node/api/filters.ts) of: exactly it, first of several,
 * last of several, or in the middle. A value with an operator of its own (`^ord`, `!x`, ...) goes as typed.
 */
export function topicParams(value: string): string | string[] | undefined {
  const v = value.trim()
  if (!v) return undefined
  if (/^[!:@^$<>=]/.test(v)) return v
  return [v, `^${v},`, `$,${v}`, `@,${v},`]
}

/**
 * The filters as FireFly filter parameters: each value goes as typed (so `^ord` or `!x` use the API's operators);
 * the topic field is `topics` (as a membership test, topicParams), and an author given as a bare org name becomes its DID.
 */
function toParams(f: Filters): Params {
  const author = f.author.trim()
  return {
    type: f.type || undefined,
    topics: topicParams(f.topic),
    tag: f.tag.trim() || undefined,
    author: author && !/^[!:@^$<>=]|^did:/.test(author) ? `did:firefly:org/${author}` : author || undefined,
    group: f.group.trim() || undefined,
    state: f.state || undefined,
  }
}

/** Typing settles for this long before the list is asked again. */
const DEBOUNCE_MS = 300

/** `#/messages`: messages in the API's natural order (pending first), filtered and paged by the server, live. */
export function Messages() {
  const [draft, setDraft] = useState<Filters>(EMPTY)
  const [filters, setFilters] = useState<Filters>(EMPTY)
  useEffect(() => {
    const t = setTimeout(() => setFilters(draft), DEBOUNCE_MS)
    return () => clearTimeout(t)
  }, [draft])
  const list = usePagedList<ApiMessage>(nsPath('/messages'), toParams(filters))
  const set = (name: FilterName) => (e: Event) => setDraft({ ...draft, [name]: (e.target as HTMLInputElement).value })

  return html`<section class="card">
    <h2>Messages</h2>
    <form class="filters" onSubmit=${(e: Event) => e.preventDefault()} aria-label="Filter messages">
      ${FILTERS.map(([name, label]) => {
        const choices = CHOICES[name]
        return html`<label>
          <span>${label}</span>
          ${choices
            ? html`<select data-testid=${`filter-${name}`} name=${name} value=${draft[name]} onChange=${set(name)}>
                <option value="">any</option>
                ${choices.map((c) => html`<option value=${c}>${c}</option>`)}
              </select>`
            : html`<input data-testid=${`filter-${name}`} name=${name} value=${draft[name]} onInput=${set(name)} placeholder=${name === 'author' ? 'org name or DID' : 'any'} />`}
        </label>`
      })}
    </form>
    <${ErrorNote} error=${list.error} />
    <ul class="rows" data-testid="message-list">
      ${list.items.map((m) => html`<${MessageRow} key=${m.header.id} m=${m} />`)}
    </ul>
    ${list.loaded && list.items.length === 0 && !list.error ? html`<p class="muted">No messages${Object.values(filters).some((v) => v) ? ' match these filters' : ' yet'}.</p>` : null}
    <${Pager} skip=${list.skip} limit=${PAGE_SIZE} count=${list.items.length} onSkip=${list.setSkip} />
  </section>`
}

function MessageRow({ m }: { m: ApiMessage }) {
  const h = m.header
  return html`<li class="row" data-testid="message-row" data-id=${h.id} data-state=${m.state}>
    <a class="row-main mono" href=${href(`/messages/${h.id}`, ns.value)} title=${h.id}>${h.id}</a>
    <span class="cell"><${StateBadge} state=${m.state} /></span>
    <span class="cell">${h.type}</span>
    <span class="cell" title=${h.author}>${orgName(h.author)}</span>
    <span class="cell clip" title=${h.topics.join(', ')}>${h.topics.join(', ')}</span>
    <span class="cell clip">${h.tag ?? ''}</span>
    <span class="cell muted">${time(m.confirmed ?? h.created)}</span>
    ${h.group ? html`<span class="cell"><${Mono} value=${h.group} /></span>` : null}
  </li>`
}
