import { html } from 'htm/preact'
import { MessageForm } from './send-message'
import { UploadForm } from './send-upload'
import { DatatypeForm } from './send-datatype'

/** `#/send`: the four ways to put something on the network from the console, for demos. */
export function Send() {
  return html`<div class="grid send">
    <${MessageForm} kind="broadcast" />
    <${MessageForm} kind="private" />
    <${UploadForm} />
    <${DatatypeForm} />
  </div>`
}
