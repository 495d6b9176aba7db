import { html } from 'htm/preact'
import { status, statusError } from '../state'
import { bytes, time } from '../format'
import { Mono } from '../components/mono'
import type { NodeStatus } from '../types'

/** Blocks between the chain's head and what this member has read before it is worth saying. */
const LAG_BLOCKS = 5

/** What is wrong with this member, in plain words; empty when nothing is. */
export function problems(s: NodeStatus): string[] {
  const out: string[] = []
  if (!s.chain.connected) out.push(`The chain at ${s.chain.rpc} is not reachable${s.chain.error ? `: ${s.chain.error}` : ''}.`)
  if (!s.ipfs.connected) out.push(`IPFS at ${s.ipfs.api} is not reachable${s.ipfs.error ? `: ${s.ipfs.error}` : ''}.`)
  if (!s.org.registered) out.push(`Org ${s.org.name} is not registered on the network yet (its claim is not confirmed).`)
  else if (!s.node.registered) out.push(`Node ${s.node.name} is not registered on the network yet.`)
  if (s.storage.condition !== 'ok') out.push(`Storage is ${s.storage.condition}${s.storage.detail ? `: ${s.storage.detail}` : ''}; sends are refused until it has room.`)
  if (s.database.warning) out.push(s.database.warning)
  if (s.chain.headBlock !== undefined && s.chain.headBlock - s.chain.lastProcessedBlock > LAG_BLOCKS) {
    out.push(`Behind the chain: read up to block ${s.chain.lastProcessedBlock} of ${s.chain.headBlock}.`)
  }
  return out
}

function Row({ label, testid, children }: { label: string; testid: string; children: unknown }) {
  return html`<div class="kv"><dt>${label}</dt><dd data-testid=${testid}>${children}</dd></div>`
}

function Ok({ ok, yes, no }: { ok: boolean; yes: string; no: string }) {
  return html`<span class=${ok ? 'ok' : 'bad'}>${ok ? '● ' : '▲ '}${ok ? yes : no}</span>`
}

/** `member-panel`: who this member is and how it is doing (`GET /status`). */
export function MemberPanel() {
  const s = status.value
  const err = statusError.value
  if (!s) {
    return html`<section class="card" data-testid="member-panel"><h2>This member</h2><p class=${err ? 'error' : 'muted'}>${err ?? 'Reading /status…'}</p></section>`
  }
  const found = problems(s)
  return html`<section class="card" data-testid="member-panel">
    <h2>This member <${Ok} ok=${s.healthy} yes="healthy" no="needs attention" /></h2>
    ${err ? html`<p class="error">Status not refreshed: ${err}</p>` : null}
    ${found.length > 0
      ? html`<ul class="problems" data-testid="member-problems" role="alert">${found.map((p) => html`<li>${p}</li>`)}</ul>`
      : null}
    <dl class="kvs">
      <${Row} label="Org" testid="member-org"><strong>${s.org.name}</strong> <${Mono} value=${s.org.did} /><//>
      <${Row} label="Node" testid="member-node"><strong>${s.node.name}</strong> <${Mono} value=${s.node.did} /><//>
      <${Row} label="Signing key" testid="member-key"><${Mono} value=${s.org.key} /><//>
      <${Row} label="Chain head" testid="chain-head">
        ${s.chain.headBlock ?? '—'} <${Ok} ok=${s.chain.connected} yes="connected" no="not connected" />
      <//>
      <${Row} label="Last block read" testid="chain-processed">${s.chain.lastProcessedBlock}<//>
      <${Row} label="IPFS" testid="ipfs-status">
        <${Ok} ok=${s.ipfs.connected} yes=${`connected${s.ipfs.version ? ` (kubo ${s.ipfs.version})` : ''}`} no="not connected" />
      <//>
      <${Row} label="Registration" testid="registration-status">
        <${Ok} ok=${s.org.registered && s.node.registered} yes="org and node registered" no=${s.org.registered ? 'node not registered' : 'org not registered'} />
      <//>
      <${Row} label="Database" testid="member-database">${bytes(s.database.bytes)} of ${bytes(s.database.limitBytes)} (${Math.round(s.database.used * 100)}%)<//>
      <${Row} label="Version" testid="member-version">${s.version}, up since ${time(s.started)}<//>
    </dl>
  </section>`
}
