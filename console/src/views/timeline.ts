import { html } from 'htm/preact'
import { Mono } from '../components/mono'
import { clock, time } from '../format'
import type { Trace, TraceStep } from '../types'

/** Fields of a step shown beside its detail, by name (the detail already says the rest in words). */
const SHOWN = ['batch', 'cid', 'chainTx', 'block', 'blob', 'state'] as const

/**
 * `message-timeline`: the trace as a sequence across lanes, one lane per org. This member's lane holds its own
 * steps; a step that names another org (a private delivery to it, a batch received from it) is drawn as an arrow
 * between the two lanes, so a private message reads as a sequence diagram.
 */
export function Timeline({ trace }: { trace: Trace }) {
  const others = [...new Set(trace.timeline.map((s) => s.org).filter((o): o is string => o !== undefined && o !== trace.org))]
  const lanes = [trace.org, ...others]
  const cols = `grid-template-columns: 7.5em repeat(${lanes.length}, minmax(0, 1fr))`
  return html`<div class="timeline" role="list">
    <div class="lanes head" style=${cols} aria-hidden="true"><span></span>${lanes.map((l) => html`<span class="lane-name">${l}${l === trace.org ? ' (here)' : ''}</span>`)}</div>
    ${trace.timeline.map((s) => html`<${Step} step=${s} lanes=${lanes} cols=${cols} />`)}
    ${trace.waiting
      ? html`<div class="wait" data-testid="timeline-wait" role="status">
          <strong>Waiting: ${trace.waiting.reason}</strong> — ${trace.waiting.detail}
          ${trace.waiting.since ? html` <span class="muted">(since ${time(trace.waiting.since)})</span>` : null}
        </div>`
      : null}
  </div>`
}

function Step({ step, lanes, cols }: { step: TraceStep; lanes: string[]; cols: string }) {
  const other = step.org && step.org !== lanes[0] ? lanes.indexOf(step.org) : -1
  // Delivered: from here to the other org; received or fetched from a peer: from it to here.
  const outbound = step.step === 'delivered'
  return html`<div class=${`lanes step step-${step.step}`} style=${cols} data-testid="timeline-step" role="listitem">
    <span class="at mono" title=${step.at}>${clock(step.at)}</span>
    <div class="lane-cell" style=${`grid-column: 2 / span ${other > 0 ? other + 1 : 1}`}>
      ${other > 0 ? html`<span class=${`arrow ${outbound ? 'out' : 'in'}`} aria-hidden="true"></span>` : null}
      <span class="step-name">${step.step.replace('_', ' ')}</span>
      ${step.org && other > 0 ? html` <span class="muted">${outbound ? '→' : '←'} ${step.org}</span>` : null}
      <span class="detail">${step.detail}</span>
      <span class="fields">${SHOWN.filter((k) => step[k] !== undefined).map((k) => html`<span class="step-field">${k} <${Mono} value=${String(step[k])} /></span>`)}</span>
    </div>
  </div>`
}
