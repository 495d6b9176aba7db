import { html } from 'htm/preact'
import { apiUpload, nsPath } from '../api'
import { FieldError, FormError, useForm } from '../form-errors'
import type { DataItem } from '../types'

/** `upload-form`: a file as a blob (`POST data`, multipart), answered with its data id and a download link. */
export function UploadForm() {
  const form = useForm<DataItem>(['file'])
  const onSubmit = (e: Event) => {
    e.preventDefault()
    const el = e.currentTarget as HTMLFormElement
    const file = (el.elements.namedItem('file') as HTMLInputElement | null)?.files?.[0]
    if (!file) return form.fail('file', 'choose a file first')
    const body = new FormData()
    body.append('file', file, file.name)
    void form.submit(() => apiUpload<DataItem>(nsPath('/data'), body))
  }
  return html`<form class="card" data-testid="upload-form" onSubmit=${onSubmit} aria-label="Upload a file">
    <h2>Upload a file</h2>
    <p class="hint">Stored on this member as a blob; send it in a message by its data id.</p>
    <label class="field"><span>File</span><input type="file" name="file" aria-describedby="err-file" /><${FieldError} errors=${form.errors} field="file" /></label>
    <${FormError} errors=${form.errors} />
    <div class="actions">
      <button type="submit" data-testid="send-submit" disabled=${form.busy}>${form.busy ? 'Uploading…' : 'Upload'}</button>
      ${form.result
        ? html`<a class="result" data-testid="send-result" data-id=${form.result.id} href=${nsPath(`/data/${form.result.id}/blob`)}>Data <span class="mono">${form.result.id}</span></a>`
        : null}
    </div>
  </form>`
}
