import { html } from 'htm/preact'
import { useEffect, useState } from 'preact/hooks'
import { apiGet, nsPath } from '../api'
import { ListCard } from '../components/list-card'
import { Mono } from '../components/mono'
import { time } from '../format'
import type { Subscription } from '../types'
import { usePagedList } from '../use-list'

/** How often the offsets of the shown page are read again (they move as their clients acknowledge). */
const OFFSETS_EVERY_MS = 2_000

/**
 * `#/subscriptions`: the durable subscriptions, with their offsets. The list does not carry offsets, so each shown
 * row's is read with `GET subscriptions/{id}?fetchstatus=true` (a page is at most PAGE_SIZE of them).
 */
export function Subscriptions() {
  // No event announces a subscription made or deleted: the list is read again with the offsets.
  const list = usePagedList<Subscription>(nsPath('/subscriptions'), {}, () => false, OFFSETS_EVERY_MS)
  const [offsets, setOffsets] = useState<Record<string, number>>({})
  const ids = list.items.map((s) => s.id).join(',')
  useEffect(() => {
    let live = true
    const read = () =>
      Promise.all(list.items.map((s) => apiGet<Subscription>(nsPath(`/subscriptions/${s.id}`), { fetchstatus: true }).catch(() => undefined))).then((got) => {
        if (!live) return
        const next: Record<string, number> = {}
        for (const s of got) if (s?.status) next[s.id] = s.status.currentOffset
        setOffsets(next)
      })
    void read()
    const t = setInterval(() => void read(), OFFSETS_EVERY_MS)
    return () => {
      live = false
      clearInterval(t)
    }
  }, [ids])

  return html`<${ListCard}
    title="Subscriptions"
    testid="subscription-list"
    list=${list}
    empty="No subscriptions in this namespace."
    row=${(s: Subscription) => html`<li class="row" data-testid="subscription-row" key=${s.id}>
      <span class="cell"><strong>${s.name}</strong></span>
      <span class="cell">${s.transport}</span>
      <span class="cell clip" title="event filter">${s.filter.events ?? '.*'}</span>
      <span class="cell">offset <span class="mono" data-testid="subscription-offset">${offsets[s.id] ?? '…'}</span></span>
      <span class="cell"><${Mono} value=${s.id} /></span>
      <span class="cell muted">${time(s.created)}</span>
    </li>`}
  />`
}
