import { html } from 'htm/preact'
import { MemberPanel } from './member-panel'
import { NetworkPicture } from './network-picture'
import { ConfirmChart } from './confirm-chart'

/** `#/`: this member, the network as a picture, and the confirmation rate. */
export function Overview() {
  return html`<div class="grid overview">
    <${MemberPanel} />
    <section class="card net">
      <h2>Network</h2>
      <p class="hint">Every registered org with its nodes, the chain and IPFS; dots travel as pins, batches and private deliveries happen.</p>
      <${NetworkPicture} />
    </section>
    <section class="card wide">
      <h2>Messages confirmed per second <span class="muted">(last 5 minutes)</span></h2>
      <${ConfirmChart} />
    </section>
  </div>`
}
