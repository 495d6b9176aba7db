import { html } from 'htm/preact'
import { useState } from 'preact/hooks'
import { apiPost, nsPath } from '../api'
import { FieldError, FormError, parseJsonField, useForm } from '../form-errors'
import { href } from '../router'
import { ns, orgs, status } from '../state'
import type { ApiMessage } from '../types'

const FIELDS = ['topic', 'tag', 'datatype-name', 'datatype-version', 'value', 'members'] as const

type Kind = 'broadcast' | 'private'

/** The body of `POST messages/broadcast` or `messages/private` from the form's fields. */
function messageBody(f: Record<string, string>, value: unknown, members: string[]): object {
  const datatype = f['datatype-name'] ? { datatype: { name: f['datatype-name'], version: f['datatype-version'] || '1.0' } } : {}
  return {
    header: { ...(f.topic ? { topics: [f.topic] } : {}), ...(f.tag ? { tag: f.tag } : {}) },
    data: [{ value, ...datatype }],
    ...(members.length > 0 ? { group: { members: members.map((identity) => ({ identity })) } } : {}),
  }
}

/**
 * `send-broadcast-form` / `send-private-form`: a message with one JSON value; private to the members ticked. The
 * member boxes appear once this member's status is known, so its own box is checked and disabled from the first.
 */
export function MessageForm({ kind }: { kind: Kind }) {
  const form = useForm<ApiMessage>(FIELDS)
  const [picked, setPicked] = useState<string[]>([])
  const self = status.value?.org.name
  const testid = `send-${kind}-form`

  const onSubmit = (e: Event) => {
    e.preventDefault()
    const data = new FormData(e.currentTarget as HTMLFormElement)
    const f: Record<string, string> = {}
    for (const name of FIELDS) f[name] = String(data.get(name) ?? '').trim()
    const parsed = parseJsonField(f.value || '{}', 'value', form)
    if (!parsed) return
    // The sender is always in the group; the API adds it, so only the others picked are sent.
    const members = kind === 'private' ? picked.filter((o) => o !== self) : []
    void form.submit(() => apiPost<ApiMessage>(nsPath(`/messages/${kind}`), messageBody(f, parsed.value, members)))
  }

  const toggle = (org: string) => (e: Event) => {
    const on = (e.target as HTMLInputElement).checked
    setPicked((p) => (on ? [...p, org] : p.filter((x) => x !== org)))
  }
  const input = (name: string, label: string, placeholder = '') => html`<label class="field">
    <span>${label}</span>
    <input name=${name} placeholder=${placeholder} aria-describedby=${`err-${name}`} />
    <${FieldError} errors=${form.errors} field=${name} />
  </label>`

  return html`<form class="card" data-testid=${testid} onSubmit=${onSubmit} aria-label=${kind === 'broadcast' ? 'Broadcast a message' : 'Send a private message'}>
    <h2>${kind === 'broadcast' ? 'Broadcast' : 'Private message'}</h2>
    <p class="hint">${kind === 'broadcast' ? 'To every member, through IPFS and the chain.' : 'To the members you pick, peer to peer, pinned on the chain.'}</p>
    ${kind === 'private'
      ? html`<fieldset class="members">
          <legend>Members</legend>
          ${(self === undefined ? [] : orgs.value).map((o) => {
            const mine = o.name === self
            return html`<label class="check">
              <input type="checkbox" name="member" value=${o.name} data-testid=${`member-${o.name}`} checked=${mine || picked.includes(o.name)} disabled=${mine} onChange=${toggle(o.name)} />
              ${o.name}${mine ? ' (you)' : ''}
            </label>`
          })}
          ${self === undefined
            ? html`<span class="muted">Reading this member…</span>`
            : orgs.value.length === 0
              ? html`<span class="muted">No registered orgs yet.</span>`
              : null}
          <${FieldError} errors=${form.errors} field="members" />
        </fieldset>`
      : null}
    ${input('topic', 'Topic', 'e.g. orders')}
    ${input('tag', 'Tag', 'optional')}
    <div class="pair">
      ${input('datatype-name', 'Datatype', 'optional')}
      ${input('datatype-version', 'Version', '1.0')}
    </div>
    <label class="field">
      <span>Value (JSON)</span>
      <textarea name="value" rows="4" spellcheck="false" aria-describedby="err-value">{"hello": "world"}</textarea>
      <${FieldError} errors=${form.errors} field="value" />
    </label>
    <${FormError} errors=${form.errors} />
    <div class="actions">
      <button type="submit" data-testid="send-submit" disabled=${form.busy}>${form.busy ? 'Sending…' : 'Send'}</button>
      ${form.result
        ? html`<a class="result" data-testid="send-result" data-id=${form.result.header.id} href=${href(`/messages/${form.result.header.id}`, ns.value)}>Sent: <span class="mono">${form.result.header.id}</span></a>`
        : null}
    </div>
  </form>`
}
