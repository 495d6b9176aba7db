import { html } from 'htm/preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import { apiGetList, errorText, nsPath } from '../api'
import { onEvent } from '../events'
import { ns } from '../state'
import type { ApiEvent } from '../types'

const WINDOW_S = 300
const HEIGHT = 200
/** The most events the backfill reads (the API's page limit): a faster rate than this shows only its tail at first. */
const BACKFILL = 1000

/** Counts per second over the last WINDOW_S seconds, as uPlot's columns (x in Unix seconds). */
class PerSecond {
  private counts = new Map<number, number>()
  add(atMs: number): void {
    const s = Math.floor(atMs / 1000)
    this.counts.set(s, (this.counts.get(s) ?? 0) + 1)
  }
  columns(nowMs: number): [number[], number[]] {
    const end = Math.floor(nowMs / 1000)
    const xs: number[] = []
    const ys: number[] = []
    for (let s = end - WINDOW_S; s <= end; s++) {
      xs.push(s)
      ys.push(this.counts.get(s) ?? 0)
    }
    for (const k of this.counts.keys()) if (k < end - WINDOW_S) this.counts.delete(k)
    return [xs, ys]
  }
}

/** `confirm-chart`: message_confirmed events per second, backfilled from the event log, then counted live. */
export function ConfirmChart() {
  const box = useRef<HTMLDivElement>(null)
  const [error, setError] = useState<string | undefined>(undefined)
  const [total, setTotal] = useState(0)
  const namespace = ns.value

  useEffect(() => {
    const el = box.current
    if (!el) return
    const counts = new PerSecond()
    let seen = 0
    const plot = new uPlot(
      {
        width: Math.max(200, el.clientWidth),
        height: HEIGHT,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(5, Math.ceil(max * 1.2))] } },
        axes: [{ stroke: '#64748b', grid: { stroke: '#e2e8f0' } }, { stroke: '#64748b', grid: { stroke: '#e2e8f0' }, size: 40 }],
        series: [{}, { label: 'confirmed/s', stroke: '#2563eb', fill: 'rgba(37,99,235,0.12)', width: 2, points: { show: false } }],
      },
      counts.columns(Date.now()),
      el,
    )
    let live = true
    const draw = () => plot.setData(counts.columns(Date.now()))
    // Live events are counted by arrival, the backfill by the events' own times (the node's clock). An event confirmed
    // while the backfill is in flight comes both ways: the sequences counted live keep it from counting twice.
    const countedLive = new Set<number>()
    const off = onEvent((e: ApiEvent) => {
      if (e.type !== 'message_confirmed') return
      countedLive.add(e.sequence)
      counts.add(Date.now())
      setTotal(++seen)
    })
    apiGetList<ApiEvent>(nsPath('/events'), { type: 'message_confirmed', sort: '-sequence', limit: BACKFILL })
      .then((events) => {
        if (!live) return
        const since = Date.now() - WINDOW_S * 1000
        for (const e of events) {
          if (countedLive.has(e.sequence)) continue
          const at = Date.parse(e.created)
          if (at >= since) counts.add(at)
        }
        countedLive.clear()
        draw()
      })
      .catch((err: unknown) => live && setError(errorText(err)))
    const tick = setInterval(draw, 1000)
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }))
    resize.observe(el)
    return () => {
      live = false
      off()
      clearInterval(tick)
      resize.disconnect()
      plot.destroy()
    }
  }, [namespace])

  return html`<div>
    <div class="chart" data-testid="confirm-chart" ref=${box} role="img" aria-label="Messages confirmed per second over the last five minutes"></div>
    <p class="muted small">${error ? html`<span class="error">${error}</span>` : `${total} confirmed since this page opened`}</p>
  </div>`
}
