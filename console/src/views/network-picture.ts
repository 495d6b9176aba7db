import { html } from 'htm/preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { onEvent } from '../events'
import { nodes, orgName, orgs, status } from '../state'
import type { ApiEvent, Identity } from '../types'

const W = 800
const H = 330
const CHAIN = { x: W / 2, y: 42 }
const IPFS = { x: W / 2, y: H - 40 }
const MEMBER_Y = H / 2
const PULSE_MS = 900

interface Point {
  x: number
  y: number
}
interface Pulse {
  id: number
  from: Point
  to: Point
  kind: 'pin' | 'mined' | 'batch' | 'private'
}

function memberPoints(names: string[]): Map<string, Point> {
  const gap = names.length > 1 ? (W - 160) / (names.length - 1) : 0
  return new Map(names.map((n, i) => [n, { x: names.length > 1 ? 80 + i * gap : W / 2, y: MEMBER_Y }]))
}

/** Which org signs with `key` (an org's verifiers are its keys). */
function orgOfKey(list: Identity[], key: string | undefined): string | undefined {
  if (!key) return undefined
  const k = key.toLowerCase()
  return list.find((o) => o.verifiers?.some((v) => v.value.toLowerCase() === k))?.name
}

/** What an event shows moving: from where to where, named by member or `chain` / `ipfs`. */
function flows(e: ApiEvent, self: string, list: Identity[]): [string, string, Pulse['kind']][] {
  switch (e.type) {
    case 'transaction_submitted':
      return [[self, 'chain', 'pin']]
    case 'blockchain_event_received': {
      const author = orgOfKey(list, e.blockchainEvent?.output?.author)
      return author && author !== self ? [[author, 'chain', 'pin'], ['chain', self, 'mined']] : [['chain', self, 'mined']]
    }
    case 'message_confirmed': {
      const m = e.message
      if (!m) return []
      const author = orgName(m.header.author)
      if (author === self) return []
      return m.header.type === 'private' || m.header.type === 'groupinit' ? [[author, self, 'private']] : [['ipfs', self, 'batch']]
    }
    default:
      return []
  }
}

/** A dot moving from one place to another once, then gone (the Web Animations API: no per-frame work here). */
function PulseDot({ pulse }: { pulse: Pulse }) {
  const ref = useRef<SVGCircleElement>(null)
  useEffect(() => {
    const dx = pulse.to.x - pulse.from.x
    const dy = pulse.to.y - pulse.from.y
    ref.current?.animate([{ transform: 'translate(0px, 0px)', opacity: 1 }, { transform: `translate(${dx}px, ${dy}px)`, opacity: 0.2 }], {
      duration: PULSE_MS,
      easing: 'ease-in-out',
      fill: 'forwards',
    })
  }, [])
  return html`<circle ref=${ref} class=${`pulse ${pulse.kind}`} cx=${pulse.from.x} cy=${pulse.from.y} r="7" />`
}

/** `network-picture`: the registered orgs (with their nodes), the chain and IPFS, and what flows between them. */
export function NetworkPicture() {
  const [pulses, setPulses] = useState<Pulse[]>([])
  const self = status.value?.org.name ?? ''
  const list = orgs.value
  const names = list.map((o) => o.name).sort()
  const points = memberPoints(names)
  const where = useRef<(name: string) => Point | undefined>(() => undefined)
  where.current = (name) => (name === 'chain' ? CHAIN : name === 'ipfs' ? IPFS : points.get(name))
  const context = useRef({ self, list })
  context.current = { self, list }

  useEffect(() => {
    let next = 0
    const timers = new Set<ReturnType<typeof setTimeout>>()
    const off = onEvent((e) => {
      const { self: me, list: known } = context.current
      const born = flows(e, me, known).flatMap(([a, b, kind]) => {
        const from = where.current(a)
        const to = where.current(b)
        return from && to ? [{ id: next++, from, to, kind }] : []
      })
      if (born.length === 0) return
      // A burst of events is drawn as at most a few dozen dots at once.
      setPulses((p) => [...p, ...born].slice(-40))
      const t = setTimeout(() => {
        timers.delete(t)
        setPulses((p) => p.filter((x) => !born.includes(x)))
      }, PULSE_MS + 50)
      timers.add(t)
    }, { chain: true })
    return () => {
      off()
      for (const t of timers) clearTimeout(t)
    }
  }, [])

  const nodeNames = (org: Identity): string[] => nodes.value.filter((n) => n.parent === org.id).map((n) => n.name)
  return html`<svg class="picture" data-testid="network-picture" viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${`Network: ${names.join(', ') || 'no registered orgs yet'}, the chain and IPFS`}>
    ${names.map((n) => {
      const p = points.get(n)!
      return html`<line class="edge" x1=${p.x} y1=${p.y} x2=${CHAIN.x} y2=${CHAIN.y} /><line class="edge" x1=${p.x} y1=${p.y} x2=${IPFS.x} y2=${IPFS.y} />`
    })}
    <g class="infra chain"><rect x=${CHAIN.x - 70} y=${CHAIN.y - 22} width="140" height="44" rx="8" /><text x=${CHAIN.x} y=${CHAIN.y + 5}>chain${status.value?.chain.headBlock !== undefined ? ` · #${status.value.chain.headBlock}` : ''}</text></g>
    <g class="infra ipfs"><rect x=${IPFS.x - 70} y=${IPFS.y - 22} width="140" height="44" rx="8" /><text x=${IPFS.x} y=${IPFS.y + 5}>IPFS</text></g>
    ${list
      .slice()
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((o) => {
        const p = points.get(o.name)!
        return html`<g class=${`member${o.name === self ? ' self' : ''}`} data-testid="network-member" data-org=${o.name}>
          <title>${o.name} (${o.did})${o.name === self ? ' — this member' : ''}</title>
          <circle cx=${p.x} cy=${p.y} r="30" />
          <text class="name" x=${p.x} y=${p.y + 5}>${o.name}</text>
          <text class="nodes" x=${p.x} y=${p.y + 48}>${nodeNames(o).join(', ')}</text>
        </g>`
      })}
    ${pulses.map((p) => html`<${PulseDot} key=${p.id} pulse=${p} />`)}
  </svg>
  <p class="legend"><span class="k pin"></span>pin sent <span class="k mined"></span>pin read <span class="k batch"></span>broadcast batch <span class="k private"></span>private delivery</p>`
}
