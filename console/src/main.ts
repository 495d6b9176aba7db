import './locale-guard'
import { html } from 'htm/preact'
import { render } from 'preact'
import { App } from './app'
import { startEvents } from './events'
import { startNetworkWatch } from './network-watch'

/** The console's entry: live connection and shared state first, then the app into #app. */
startEvents()
startNetworkWatch()
const root = document.getElementById('app')
if (root) {
  root.textContent = ''
  render(html`<${App} />`, root)
}
