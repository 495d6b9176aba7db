/**
 * The web console's first view: the first member's `/ui` opened in headless Chromium (the browser tests' launcher,
 * `test/support/chromium.ts`), a fresh browser with a fresh profile and an empty cache for every load, timed in the
 * page from navigation start to the view being rendered.
 */
import type { Page, Response } from 'playwright-core'
import type { MemberDescription } from '../../network/description.js'
import { formatProblems, launchChromium, PageWatch } from '../../test/support/chromium.js'
import { nsBase } from '../../test/support/api.js'
import { get, postJson, sleep } from './http.js'
import { round, summarize } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'

const NAMESPACE = 'default'
const VIEWPORT = { width: 1280, height: 800 }
const RENDER_TIMEOUT_MS = 30_000
/** The issue's aim for the first view on the local network. */
const TARGET_MS = 1000

/** What a first view is, per route: the selector whose presence means it is rendered (with text, when asked). */
const VIEWS = [
  {
    name: 'overview',
    hash: '#/',
    what: 'member panel showing its org',
    selector: '[data-testid="member-panel"] [data-testid="member-org"]',
    needsText: true,
  },
  {
    name: 'messages',
    hash: '#/messages',
    what: 'message list showing its first row',
    selector: '[data-testid="message-list"] [data-testid="message-row"]',
    needsText: false,
  },
] as const

/**
 * Runs in the page before its own scripts: watches the DOM and, at the first mutation after which `selector` matches
 * (with non-empty text if asked), records the time of the next animation frame (when that DOM is painted), in
 * milliseconds since navigation start, as `window.parleyFirstView`.
 */
function firstViewProbe(selector: string, needsText: boolean): string {
  return `(() => {
    const selector = ${JSON.stringify(selector)}
    const needsText = ${needsText}
    let seen = false
    const check = () => {
      if (seen) return
      const el = document.querySelector(selector)
      if (!el || (needsText && (el.textContent || '').trim() === '')) return
      seen = true
      observer.disconnect()
      window.parleyFirstViewDom = performance.now()
      requestAnimationFrame(() => { window.parleyFirstView = performance.now() })
    }
    const observer = new MutationObserver(check)
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true })
  })()`
}

interface Load {
  /** Navigation start to the view rendered (the frame after its DOM is in place), ms. */
  firstViewMs: number
  /** Navigation start to the DOM being in place, ms. */
  domMs: number
  /** Navigation start to the end of index.html's response, ms. */
  htmlMs: number
  /** Bytes of the console's own files (index.html and assets): over the wire (headers included), and of their bodies decoded. */
  transferBytes: number
  decodedBytes: number
  errors: string
}

/** One cold load: a new browser (fresh profile, empty cache), one page at 1280×800, the view timed in the page. */
async function coldLoad(url: string, view: (typeof VIEWS)[number]): Promise<Load> {
  const chromium = await launchChromium()
  try {
    const context = await chromium.browser.newContext({ viewport: VIEWPORT })
    const page: Page = await context.newPage()
    const watch = await PageWatch.attach(page)
    // The console's own files, sized from the browser's network records (headers included, as they cross the wire).
    const files: Response[] = []
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/ui')) files.push(r)
    })
    await page.addInitScript({ content: firstViewProbe(view.selector, view.needsText) })
    const res = await page.goto(url, { waitUntil: 'commit', timeout: RENDER_TIMEOUT_MS })
    if (!res || res.status() !== 200) throw new Error(`GET ${url} answered ${res?.status() ?? 'nothing'}: ${res ? await res.text().catch(() => '') : ''}`)
    // A function, not a string: the console's CSP (no 'unsafe-eval') refuses playwright's eval of a string predicate.
    await page.waitForFunction(() => (globalThis as unknown as { parleyFirstView?: number }).parleyFirstView !== undefined, undefined, { timeout: RENDER_TIMEOUT_MS })
    const m = (await page.evaluate(`(() => {
      const nav = performance.getEntriesByType('navigation')[0]
      return {
        firstViewMs: window.parleyFirstView,
        domMs: window.parleyFirstViewDom,
        htmlMs: nav ? nav.responseEnd : NaN,
      }
    })()`)) as Pick<Load, 'firstViewMs' | 'domMs' | 'htmlMs'>
    let transferBytes = 0
    let decodedBytes = 0
    for (const r of files) {
      const sizes = await r.request().sizes()
      transferBytes += sizes.responseHeadersSize + sizes.responseBodySize
      decodedBytes += (await r.body()).length
    }
    await context.close()
    return { ...m, transferBytes, decodedBytes, errors: formatProblems(watch.errors()) }
  } finally {
    await chromium.close()
  }
}

/** The network's message list must not be empty for its first row to be timed: one broadcast, confirmed here. */
async function ensureAMessage(m: MemberDescription, signal: AbortSignal): Promise<void> {
  const list = await get(`${nsBase(m, NAMESPACE)}/messages?limit=1`)
  if (list.status === 200 && (JSON.parse(list.text) as unknown[]).length > 0) return
  const res = await postJson(`${nsBase(m, NAMESPACE)}/messages/broadcast`, { header: { tag: 'bench-console' }, data: [{ value: { console: true } }] })
  if (res.status !== 202) throw new Error(`broadcast answered ${res.status}: ${res.text}`)
  const id = (JSON.parse(res.text) as { header: { id: string } }).header.id
  const deadline = Date.now() + 60_000
  for (;;) {
    throwIfAborted(signal)
    const r = await get(`${nsBase(m, NAMESPACE)}/messages/${id}`)
    if (r.status === 200 && (JSON.parse(r.text) as { state: string }).state === 'confirmed') return
    if (Date.now() > deadline) throw new Error(`message ${id} not confirmed on ${m.org} within 60 s`)
    await sleep(100)
  }
}

export const consoleScenario: Scenario = {
  name: 'console',
  describe: "the web console's first view in headless Chromium, a fresh profile each load",
  async run(ctx: BenchContext): Promise<{ [key: string]: Json }> {
    const m = ctx.members[0]!
    const base = `${(m.ui ?? `${m.api}/ui`).replace(/\/$/, '')}/`
    await ensureAMessage(m, ctx.signal)
    const runs = ctx.options.consoleRuns
    const section: { [key: string]: Json } = { runs, viewport: `${VIEWPORT.width}x${VIEWPORT.height}`, targetMs: TARGET_MS }
    for (const view of VIEWS) {
      const loads: Load[] = []
      for (let i = 0; i < runs; i++) {
        throwIfAborted(ctx.signal)
        const load = await coldLoad(base + view.hash, view)
        if (load.errors !== '') ctx.log(`  ${view.name} run ${i + 1}: the page reported errors\n${load.errors}`)
        loads.push(load)
      }
      const fv = summarize(loads.map((l) => l.firstViewMs))
      const dom = summarize(loads.map((l) => l.domMs))
      const html = summarize(loads.map((l) => l.htmlMs))
      const last = loads[loads.length - 1]!
      ctx.log(
        `${view.name} (${base}${view.hash}, navigation start to the ${view.what}): ` +
          `${loads.map((l) => l.firstViewMs.toFixed(0)).join(', ')} ms; fastest ${fv.min.toFixed(0)} ms, median ${fv.p50.toFixed(0)} ms ` +
          `(DOM in place: median ${dom.p50.toFixed(0)} ms; index.html received: median ${html.p50.toFixed(0)} ms; ` +
          `the console's files ${(last.transferBytes / 1024).toFixed(1)} KiB over the wire, ${(last.decodedBytes / 1024).toFixed(1)} KiB decoded)` +
          (fv.p50 > TARGET_MS ? ` — over the ${TARGET_MS} ms aim` : ''),
      )
      section[view.name] = {
        firstViewFastestMs: round(fv.min, 0),
        firstViewMedianMs: round(fv.p50, 0),
        firstViewMs: loads.map((l) => round(l.firstViewMs, 0)),
        domMedianMs: round(dom.p50, 0),
        htmlMedianMs: round(html.p50, 0),
        transferKiB: round(last.transferBytes / 1024, 1),
        decodedKiB: round(last.decodedBytes / 1024, 1),
        pageErrors: loads.filter((l) => l.errors !== '').length,
      }
    }
    return section
  },
}
