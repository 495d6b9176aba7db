import { html } from 'htm/preact'
import { apiPost, nsPath } from '../api'
import { FieldError, FormError, parseJsonField, useForm } from '../form-errors'
import { href } from '../router'
import { ns } from '../state'
import type { ApiMessage } from '../types'

const EXAMPLE = JSON.stringify({ type: 'object', required: ['size'], properties: { size: { type: 'integer' } } }, null, 2)

/** `datatype-form`: defines a datatype (a broadcast definition; usable once confirmed). */
export function DatatypeForm() {
  const form = useForm<ApiMessage>(['name', 'version', 'schema'])
  const onSubmit = (e: Event) => {
    e.preventDefault()
    const data = new FormData(e.currentTarget as HTMLFormElement)
    const schema = parseJsonField(String(data.get('schema') ?? ''), 'schema', form)
    if (!schema) return
    const body = { name: String(data.get('name') ?? '').trim(), version: String(data.get('version') ?? '').trim(), value: schema.value }
    void form.submit(() => apiPost<ApiMessage>(nsPath('/datatypes'), body))
  }
  const input = (name: string, label: string, placeholder: string) =>
    html`<label class="field"><span>${label}</span><input name=${name} placeholder=${placeholder} aria-describedby=${`err-${name}`} /><${FieldError} errors=${form.errors} field=${name} /></label>`
  return html`<form class="card" data-testid="datatype-form" onSubmit=${onSubmit} aria-label="Define a datatype">
    <h2>Define a datatype</h2>
    <p class="hint">A JSON Schema every member checks values against.</p>
    <div class="pair">${input('name', 'Name', 'e.g. widget')}${input('version', 'Version', '1.0')}</div>
    <label class="field">
      <span>Schema (JSON)</span>
      <textarea name="schema" rows="6" spellcheck="false" aria-describedby="err-schema">${EXAMPLE}</textarea>
      <${FieldError} errors=${form.errors} field="schema" />
    </label>
    <${FormError} errors=${form.errors} />
    <div class="actions">
      <button type="submit" data-testid="send-submit" disabled=${form.busy}>${form.busy ? 'Defining…' : 'Define'}</button>
      ${form.result
        ? html`<a class="result" data-testid="send-result" data-id=${form.result.header.id} href=${href(`/messages/${form.result.header.id}`, ns.value)}>Definition <span class="mono">${form.result.header.id}</span></a>`
        : null}
    </div>
  </form>`
}
