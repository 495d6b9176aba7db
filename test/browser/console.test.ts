/**
 * The web console (`/ui`) in a real browser against a real 3-member network: headless Chromium from
 * `@sparticuz/chromium` driven by playwright-core. The page hooks are the `data-testid`s of the console contract.
 * Screenshots of each view land in `test-results/console/<view>.png`. Every wait polls with a generous limit: these
 * tests assert what the console shows, never how fast.
 */
import { expect } from 'chai'
import type { BrowserContext, Locator, Page, Response } from 'playwright-core'
import type { MemberDescription } from '../../network/description.js'
import { waitFor } from '../../network/process.js'
import { get, messageReaching, nsBase, request, runId, send, type ApiMessage } from '../support/api.js'
import { testNetwork } from '../support/network.js'
import { formatProblems, launchChromium, PageWatch, screenshot, type LaunchedChromium, type PageProblem } from '../support/chromium.js'

const NS = 'default'
/** How long the console may take to show something the API already has (it polls or follows the socket). */
const SHOW_MS = 30_000
/** How long the network may take to confirm a message everywhere. */
const CONFIRM_MS = 60_000
const WIDE = { width: 1280, height: 800 }
const NARROW = { width: 400, height: 800 }

/** Every view in the navigation: its link, the element that says it rendered, and the rows seeded for it. */
const VIEWS = [
  { view: 'overview', nav: 'nav-overview', hash: '#/', ready: 'member-panel', hooks: ['network-picture', 'confirm-chart'] },
  {
    view: 'messages',
    nav: 'nav-messages',
    hash: '#/messages',
    ready: 'message-list',
    row: 'message-row',
    hooks: ['filter-type', 'filter-topic', 'filter-tag', 'filter-author', 'filter-group', 'filter-state', 'page-next', 'page-prev'],
  },
  { view: 'events', nav: 'nav-events', hash: '#/events', ready: 'event-stream', row: 'event-row', hooks: ['filter-event-type'] },
  { view: 'datatypes', nav: 'nav-datatypes', hash: '#/datatypes', ready: 'datatype-list', row: 'datatype-row', hooks: [] },
  { view: 'groups', nav: 'nav-groups', hash: '#/groups', ready: 'group-list', row: 'group-row', hooks: [] },
  { view: 'batches', nav: 'nav-batches', hash: '#/batches', ready: 'batch-list', row: 'batch-row', hooks: [] },
  { view: 'subscriptions', nav: 'nav-subscriptions', hash: '#/subscriptions', ready: 'subscription-list', row: 'subscription-row', hooks: ['subscription-offset'] },
  { view: 'send', nav: 'nav-send', hash: '#/send', ready: 'send-broadcast-form', hooks: ['send-private-form', 'upload-form', 'datatype-form'] },
] as const

/** The named fields of each form of the send page (`name="<field>"` inside the form whose testid is the key). */
const FORM_FIELDS: Record<string, string[]> = {
  'send-broadcast-form': ['topic', 'tag', 'datatype-name', 'datatype-version', 'value'],
  'send-private-form': ['topic', 'tag', 'datatype-name', 'datatype-version', 'value'],
  'upload-form': ['file'],
  'datatype-form': ['name', 'version', 'schema'],
}

const tid = (id: string): string => `[data-testid="${id}"]`

describe('web console (/ui) in Chromium on a real 3-member network', function () {
  this.timeout(300_000)
  const run = runId()
  let network: Awaited<ReturnType<typeof testNetwork>> | undefined
  let chromium: LaunchedChromium | undefined
  let members: MemberDescription[] = []
  const contexts: BrowserContext[] = []
  const datatype = { name: `widget-${run}`, version: '1.0' }
  const seeded: ApiMessage[] = []

  before(async function () {
    network = await testNetwork('console')
    members = network.net.description.members
    chromium = await launchChromium()

    // Something in every list, so that each view shows rows (and its screenshot shows what it looks like).
    const [org0, org1] = members
    const schema = { type: 'object', required: ['size'], properties: { size: { type: 'integer' } } }
    const dt = await request('POST', `${nsBase(org0!, NS)}/datatypes`, { ...datatype, value: schema })
    expect(dt.status, `defining the datatype: ${JSON.stringify(dt.body)}`).to.equal(202)
    for (let i = 0; i < 3; i++) seeded.push(await send(org0!, NS, `seed-${run}`, { seed: i, run }, `seed`))
    const priv = await request<ApiMessage>('POST', `${nsBase(org0!, NS)}/messages/private`, {
      header: { topics: [`seed-private-${run}`] },
      group: { members: [{ identity: org1!.org }] },
      data: [{ value: { seed: 'private', run } }],
    })
    expect(priv.status, `seeding a private message: ${JSON.stringify(priv.body)}`).to.equal(202)
    const sub = await request('POST', `${nsBase(org0!, NS)}/subscriptions`, { name: `console-${run}`, transport: 'websockets' })
    expect(sub.status, `seeding a subscription: ${JSON.stringify(sub.body)}`).to.equal(201)
    for (const m of [...seeded, priv.body]) await messageReaching(org0!, NS, m.header.id, ['confirmed'], CONFIRM_MS)
    await waitFor(`${org0!.org} to confirm datatype ${datatype.name}`, async () => {
      const r = await get<unknown[]>(`${nsBase(org0!, NS)}/datatypes?name=${datatype.name}`)
      return r.status === 200 && r.body.length === 1
    }, { timeoutMs: CONFIRM_MS, intervalMs: 200 })
  })

  afterEach(async function () {
    // A failed test leaves a screenshot of each of its pages as it was then: failed-<test>-<n>.png.
    const open = contexts.splice(0)
    if (this.currentTest?.state === 'failed') {
      const slug = (this.currentTest.title.split(':')[0] ?? 'test').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60)
      const pages = open.flatMap((c) => c.pages())
      for (const [i, page] of pages.entries()) await screenshot(page, `failed-${slug}-${i + 1}`, { fullPage: true }).catch(() => undefined)
    }
    await Promise.all(open.map((c) => c.close().catch(() => undefined)))
  })

  after(async function () {
    // The browser and the network are stopped (by PID when they do not stop otherwise) whatever happened above.
    try {
      await chromium?.close()
    } finally {
      const alive = (await network?.stop()) ?? []
      expect(alive, 'network processes left alive after the stop').to.deep.equal([])
    }
  })

  /** The console's address on a member (network.json lists it once the node serves it). */
  const consoleUrl = (m: MemberDescription): string => `${(m.ui ?? `${m.api}/ui`).replace(/\/$/, '')}/`

  /**
   * Opens the console of `m` at `hash` in a fresh browser context; fails with the node's answer when `/ui` does not
   * serve the console. Answers the page, its problem watch and the responses of the console's own files.
   */
  async function open(m: MemberDescription, hash: string, viewport = WIDE): Promise<{ page: Page; watch: PageWatch; files: Response[] }> {
    if (!chromium) throw new Error('the browser did not start')
    const context = await chromium.browser.newContext({ viewport })
    contexts.push(context)
    const page = await context.newPage()
    page.setDefaultTimeout(SHOW_MS)
    const watch = await PageWatch.attach(page)
    const files: Response[] = []
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/ui')) files.push(r)
    })
    const url = consoleUrl(m) + hash
    const res = await page.goto(url, { waitUntil: 'domcontentloaded' })
    if (!res || res.status() !== 200) {
      const body = res ? await res.text().catch(() => '') : ''
      throw new Error(`GET ${url} answered ${res?.status() ?? 'nothing'}: the node does not serve the console ${body}`)
    }
    return { page, watch, files }
  }

  /** Waits for the live connection to be open (the console then follows the node's events). */
  const socketOpen = (page: Page): Promise<unknown> => page.waitForSelector(`${tid('ws-status')}[data-state="open"]`, { state: 'attached' })

  function expectNoErrors(watch: PageWatch, what: string, allowed?: (p: PageProblem) => boolean): void {
    const errors = watch.errors(allowed)
    expect(errors, `${what}: the page reported errors\n${formatProblems(errors)}`).to.deep.equal([])
  }

  /** The `data-testid` of the focused element ('' when it has none). */
  const activeTestId = async (page: Page): Promise<string> => (await page.evaluate(`document.activeElement?.getAttribute('data-testid') ?? ''`)) as string

  /** Waits for the route `hash` (its query, e.g. `?ns=`, aside). */
  const hashIs = (page: Page, hash: string): Promise<unknown> =>
    // A function, not a string: the console's CSP (no 'unsafe-eval') refuses playwright's eval of a string predicate.
    page.waitForFunction((h: string) => {
      const now = (globalThis as unknown as { location: { hash: string } }).location.hash
      return now === h || now.startsWith(`${h}?`)
    }, hash)

  /** No horizontal scroll: the document is no wider than the window. */
  async function expectNoHorizontalScroll(page: Page, what: string): Promise<void> {
    const { scrollWidth, clientWidth } = (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })')) as { scrollWidth: number; clientWidth: number }
    expect(scrollWidth, `${what}: document ${scrollWidth} px wide in a ${clientWidth} px window`).to.be.at.most(clientWidth)
  }

  /** The checkbox of an org in the private form: the `member-<org>` element, or the checkbox inside it (a label). */
  async function orgCheckbox(form: Locator, org: string): Promise<Locator> {
    const hook = form.locator(tid(`member-${org}`))
    await hook.waitFor({ state: 'attached' })
    const tag = await hook.evaluate((el) => el.tagName)
    return tag === 'INPUT' ? hook : hook.locator('input[type="checkbox"]')
  }

  it('loads with no console errors: every view of the navigation, screenshotted at 1280×800 and on a 400 px window without horizontal scroll', async () => {
    const [org0] = members
    const { page, watch, files } = await open(org0!, '#/')
    await page.waitForSelector(tid('member-panel'))
    await socketOpen(page)
    for (const v of VIEWS) {
      const link = page.locator(tid(v.nav))
      expect(await link.evaluate((el) => el.tagName), `${v.nav} is a link`).to.equal('A')
      expect(await link.getAttribute('href'), `${v.nav}'s href`).to.match(new RegExp(`^${v.hash.replace('/', '\\/')}(\\?|$)`))
      await link.click()
      await hashIs(page, v.hash)
      // Attached, not visible: an empty list has no height.
      await page.waitForSelector(tid(v.ready), { state: 'attached' })
      if (v.view === 'events') {
        // A live stream: an event of a broadcast sent now shows up whether or not the view lists older ones.
        await socketOpen(page)
        const sent = await send(org0!, NS, `events-${run}`, { events: run })
        await page.waitForSelector(`${tid(v.ready)} ${tid('event-row')}[data-type="message_confirmed"][data-reference="${sent.header.id}"]`, { timeout: CONFIRM_MS })
        // The chain's events (written in svc_system) come over the same socket: a broadcast sent now pins a batch.
        await page.locator(tid('filter-event-type')).selectOption('blockchain_event_received')
        const chainRows = page.locator(`${tid(v.ready)} ${tid('event-row')}[data-type="blockchain_event_received"]`)
        // The seeds' pins are listed first (from svc_system's log); the newest row's sequence is its first cell.
        await chainRows.first().waitFor({ timeout: CONFIRM_MS })
        const newest = async (): Promise<number> => Number(((await chainRows.first().locator('.cell').first().textContent()) ?? '').replace(/^#/, ''))
        const before = await newest()
        await send(org0!, NS, `events-chain-${run}`, { events: run })
        await waitFor('a live blockchain_event_received row', async () => (await newest()) > before, { timeoutMs: CONFIRM_MS, intervalMs: 200 })
        await page.locator(tid('filter-event-type')).selectOption('')
      } else if ('row' in v) await page.waitForSelector(`${tid(v.ready)} ${tid(v.row)}`)
      for (const hook of v.hooks) expect(await page.locator(tid(hook)).count(), `${v.view}: the contract's ${hook}`).to.be.greaterThan(0)
      await screenshot(page, v.view)
    }

    // Every form of the send page has the contract's fields and a submit.
    for (const [form, fields] of Object.entries(FORM_FIELDS)) {
      for (const f of [...fields.map((n) => `[name="${n}"]`), tid('send-submit')]) {
        expect(await page.locator(`${tid(form)} ${f}`).count(), `${form} has ${f}`).to.equal(1)
      }
    }

    // Another namespace travels in the route's query, so that a link names it.
    const otherNs = `other-${run}`
    await page.goto(`${consoleUrl(org0!)}#/messages?ns=${otherNs}`)
    await page.waitForSelector(tid('message-list'), { state: 'attached' })
    await waitFor('the nav links to keep the namespace', async () => ((await page.locator(tid('nav-events')).getAttribute('href')) ?? '').includes(`ns=${otherNs}`), { timeoutMs: SHOW_MS })

    // The console's own files: the page as HTML, scripts as JavaScript, styles as CSS, every one found.
    expect(files.length, 'files loaded under /ui').to.be.greaterThan(1)
    for (const r of files) {
      const path = new URL(r.url()).pathname
      const type = (await r.headerValue('content-type')) ?? ''
      expect(r.status(), `${path} status`).to.be.oneOf([200, 304])
      if (path === '/ui/' || path.endsWith('.html')) expect(type, `${path} content type`).to.match(/^text\/html\b/)
      else if (path.endsWith('.js') || path.endsWith('.mjs')) expect(type, `${path} content type`).to.match(/^(text|application)\/javascript\b/)
      else if (path.endsWith('.css')) expect(type, `${path} content type`).to.match(/^text\/css\b/)
    }
    expectNoErrors(watch, 'the console at 1280×800')

    const narrow = await open(org0!, '#/', NARROW)
    await narrow.page.waitForSelector(tid('member-panel'))
    await socketOpen(narrow.page)
    await expectNoHorizontalScroll(narrow.page, 'overview at 400 px')
    await screenshot(narrow.page, 'overview-narrow')
    await narrow.page.locator(tid('nav-messages')).click()
    await narrow.page.waitForSelector(`${tid('message-list')} ${tid('message-row')}`)
    await expectNoHorizontalScroll(narrow.page, 'messages at 400 px')
    await screenshot(narrow.page, 'messages-narrow')
    expectNoErrors(narrow.watch, 'the console at 400 px')
  })

  it('shows a broadcast sent through the REST API in the message list without a reload, then confirmed', async () => {
    const [org0, org1] = members
    const { page, watch } = await open(org0!, '#/messages')
    await page.waitForSelector(tid('message-list'), { state: 'attached' })
    await socketOpen(page)
    // Set on this document only: a reload or a navigation would lose it.
    await page.evaluate('window.parleyNoReload = true')

    // Sent by another member: it reaches this one through the chain and IPFS, and the console through its socket.
    const sent = await send(org1!, NS, `live-${run}`, { live: run })
    const row = `${tid('message-list')} ${tid('message-row')}[data-id="${sent.header.id}"]`
    await page.waitForSelector(row, { timeout: CONFIRM_MS })
    await page.waitForSelector(`${row}[data-state="confirmed"]`, { timeout: CONFIRM_MS })
    const stillHere = await page.evaluate('window.parleyNoReload === true')
    expect(stillHere, 'the page was not reloaded').to.equal(true)
    await screenshot(page, 'messages-live')
    expectNoErrors(watch, 'the message list')
  })

  it("sends a private message from the console's form, confirmed on the recipient it picked", async () => {
    const [org0, org1, org2] = members
    const { page, watch } = await open(org0!, '#/send')
    const form = page.locator(tid('send-private-form'))
    await form.waitFor()
    await socketOpen(page)

    const own = await orgCheckbox(form, org0!.org)
    // Polled: the boxes follow the status and org reads, which may land after the form first renders.
    await waitFor('the sender\'s own box to be checked and disabled', async () => (await own.isChecked()) && (await own.isDisabled()), { timeoutMs: SHOW_MS, intervalMs: 100 })
    for (const other of [org1!, org2!]) expect(await (await orgCheckbox(form, other.org)).isChecked(), `${other.org} unchecked at first`).to.equal(false)

    const value = { secret: run, qty: 3 }
    await form.locator('[name="topic"]').fill(`console-private-${run}`)
    await form.locator('[name="value"]').fill(JSON.stringify(value))
    await (await orgCheckbox(form, org1!.org)).check()
    await form.locator(tid('send-submit')).click()

    const result = page.locator(`${tid('send-result')}[data-id]`)
    await result.waitFor()
    const id = (await result.getAttribute('data-id'))!
    expect(id).to.match(/^[0-9a-f-]{36}$/)
    await screenshot(page, 'send-private')

    const there = await messageReaching(org1!, NS, id, ['confirmed'], CONFIRM_MS)
    expect(there.header.type).to.equal('private')
    expect(there.header.topics).to.deep.equal([`console-private-${run}`])
    const data = await get<{ value: unknown }[]>(`${nsBase(org1!, NS)}/messages/${id}/data`)
    expect(data.status).to.equal(200)
    expect(data.body.map((d) => d.value)).to.deep.equal([value])
    // Not picked, so never delivered there.
    expect((await get(`${nsBase(org2!, NS)}/messages/${id}`)).status, `${org2!.org} was not picked`).to.equal(404)
    expectNoErrors(watch, 'the send page')
  })

  it("shows a message's page, reached from its row: its data values and its timeline", async () => {
    const [org0] = members
    const value = { greeting: 'hello', run, nested: { n: 42, list: [1, 2, 3] } }
    const sent = await send(org0!, NS, `detail-${run}`, value, 'console-detail')
    const confirmed = await messageReaching(org0!, NS, sent.header.id, ['confirmed'], CONFIRM_MS)

    const { page, watch } = await open(org0!, '#/messages')
    const row = page.locator(`${tid('message-row')}[data-id="${sent.header.id}"]`)
    await row.waitFor()
    // The row links to the page; a link inside it, when it has one, is what a user clicks.
    const link = row.locator(`a[href*="#/messages/${sent.header.id}"]`)
    await ((await link.count()) > 0 ? link.first() : row).click()
    await hashIs(page, `#/messages/${sent.header.id}`)

    const detail = page.locator(`${tid('message-detail')}[data-id="${sent.header.id}"]`)
    await detail.waitFor()
    await detail.locator(tid('message-header')).waitFor()
    const pre = detail.locator(`${tid('message-data')} pre`)
    await pre.first().waitFor()
    expect(await pre.count(), 'one <pre> per data item').to.equal(1)
    expect(JSON.parse((await pre.first().textContent()) ?? ''), 'the data value, pretty-printed JSON').to.deep.equal(value)
    expect(await detail.locator(tid('message-batch')).textContent(), 'the batch it travelled in').to.include(confirmed.batch)

    // The sender's trace: accepted, sealed, uploaded, pinned, mined, confirmed.
    const steps = detail.locator(`${tid('message-timeline')} ${tid('timeline-step')}`)
    await waitFor('the timeline to show the six stages of a confirmed broadcast on its sender', async () => (await steps.count()) >= 6, { timeoutMs: SHOW_MS })
    const text = ((await detail.locator(tid('message-timeline')).textContent()) ?? '').toLowerCase()
    for (const stage of ['accepted', 'sealed', 'uploaded', 'pinned', 'mined', 'confirmed']) expect(text, 'the timeline names each stage').to.include(stage)
    expect(await detail.locator(tid('timeline-wait')).count(), 'a confirmed message waits for nothing').to.equal(0)
    await screenshot(page, 'message', { fullPage: true })
    expectNoErrors(watch, "the message's page")
  })

  it('shows the schema error of a bad datatype value next to the value field, and sends once it is right', async () => {
    const [org0] = members
    const { page, watch } = await open(org0!, '#/send')
    const form = page.locator(tid('send-broadcast-form'))
    await form.waitFor()
    await socketOpen(page)
    await form.locator('[name="topic"]').fill(`console-bad-${run}`)
    await form.locator('[name="datatype-name"]').fill(datatype.name)
    await form.locator('[name="datatype-version"]').fill(datatype.version)
    await form.locator('[name="value"]').fill(JSON.stringify({ size: 'big' }))
    await form.locator(tid('send-submit')).click()

    const error = form.locator(tid('field-error-value'))
    await error.waitFor()
    const text = (await error.textContent()) ?? ''
    expect(text, 'the schema error names what is wrong').to.match(/size|integer/i)
    expect(await page.locator(tid('send-result')).count(), 'nothing was sent').to.equal(0)
    await screenshot(page, 'send-bad-value')
    const sentBad = await get<unknown[]>(`${nsBase(org0!, NS)}/messages?topics=console-bad-${run}`)
    expect(sentBad.body, 'no message on the topic').to.deep.equal([])

    await form.locator('[name="value"]').fill(JSON.stringify({ size: 3 }))
    await form.locator(tid('send-submit')).click()
    const result = page.locator(`${tid('send-result')}[data-id]`)
    await result.waitFor()
    await waitFor('the value error to go once the value is right', async () => (await error.count()) === 0 || !(await error.isVisible()) || ((await error.textContent()) ?? '').trim() === '', { timeoutMs: SHOW_MS })
    await messageReaching(org0!, NS, (await result.getAttribute('data-id'))!, ['confirmed'], CONFIRM_MS)
    // The API's 400 to the bad value is the expected answer, not a fault of the page.
    expectNoErrors(watch, 'the send page', (p) => /\/messages\/broadcast/.test(p.url ?? p.text) && /\b400\b/.test(p.text))
  })

  it('is keyboard reachable: Tab reaches every navigation link, with a visible focus, and Enter follows it', async () => {
    const [org0] = members
    const { page, watch } = await open(org0!, '#/')
    await page.waitForSelector(tid('member-panel'))
    const wanted = new Set<string>(VIEWS.map((v) => v.nav))
    const reached = new Set<string>()
    for (let i = 0; i < 80 && reached.size < wanted.size; i++) {
      await page.keyboard.press('Tab')
      const id = await activeTestId(page)
      if (wanted.has(id)) reached.add(id)
    }
    expect([...reached].sort(), 'nav links reached with Tab').to.deep.equal([...wanted].sort())

    // Tab round to the messages link, see that focus shows, and follow it with Enter.
    const tabToMessages = async (): Promise<void> => {
      for (let i = 0; i < 80 && (await activeTestId(page)) !== 'nav-messages'; i++) await page.keyboard.press('Tab')
      expect(await activeTestId(page), 'focus on the messages link').to.equal('nav-messages')
    }
    await tabToMessages()
    const look = (): Promise<string> =>
      page.locator(tid('nav-messages')).evaluate((el) => {
        // The page's own getComputedStyle (the project's TypeScript has no DOM lib).
        const s = (globalThis as unknown as { getComputedStyle(e: unknown): Record<string, string> }).getComputedStyle(el)
        return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.backgroundColor, s.color, s.textDecorationLine, s.borderColor].join('|')
      })
    const focused = await look()
    await page.evaluate('document.activeElement?.blur()')
    const unfocused = await look()
    expect(focused, 'the focused link looks different from the unfocused one (visible focus)').to.not.equal(unfocused)
    await tabToMessages()
    await page.keyboard.press('Enter')
    await hashIs(page, '#/messages')
    await page.waitForSelector(tid('message-list'), { state: 'attached' })
    expectNoErrors(watch, 'keyboard navigation')
  })

  it("shows each member's org, node and key in its member panel, and one network-member per org in the network picture", async () => {
    const orgs = members.map((m) => m.org).sort()
    for (const m of members) {
      const { page, watch } = await open(m, '#/')
      const panel = page.locator(tid('member-panel'))
      await panel.waitFor()
      await socketOpen(page)
      const shows = async (hook: string, want: string): Promise<void> => {
        const el = panel.locator(tid(hook))
        await waitFor(`${m.org}'s ${hook} to show ${want}`, async () => {
          const all = await el.evaluate((e) =>
            [e.textContent ?? '', ...[e, ...Array.from(e.querySelectorAll('*'))].flatMap((x) => [x.getAttribute('title') ?? '', x.getAttribute('href') ?? ''])].join(' '),
          )
          return all.toLowerCase().includes(want.toLowerCase())
        }, { timeoutMs: SHOW_MS })
      }
      await shows('member-org', m.org)
      await shows('member-node', m.node)
      await shows('member-key', m.key)
      for (const hook of ['chain-head', 'chain-processed', 'ipfs-status', 'registration-status']) await panel.locator(tid(hook)).waitFor()
      const problems = page.locator(tid('member-problems'))
      if ((await problems.count()) > 0) expect(((await problems.textContent()) ?? '').trim(), `${m.org}: no problems on a healthy member`).to.equal('')

      const picture = page.locator(tid('network-picture'))
      await picture.waitFor()
      expect(await picture.evaluate((el) => el.tagName.toLowerCase()), 'the network picture is an svg').to.equal('svg')
      const drawn = picture.locator(tid('network-member'))
      await waitFor(`${m.org}'s network picture to draw ${orgs.length} members`, async () => (await drawn.count()) === orgs.length, { timeoutMs: SHOW_MS })
      const drawnOrgs = (await drawn.evaluateAll((els) => els.map((e) => e.getAttribute('data-org') ?? ''))).sort()
      expect(drawnOrgs, `${m.org}: one network-member per registered org`).to.deep.equal(orgs)
      if (m === members[0]) await screenshot(page, 'overview-members')
      expectNoErrors(watch, `${m.org}'s overview`)
    }
  })

  it("serves the API page (/api): Swagger UI renders the member's OpenAPI description under the page's CSP, and tries a route", async () => {
    if (!chromium) throw new Error('the browser did not start')
    const [org0] = members
    const context = await chromium.browser.newContext({ viewport: WIDE })
    contexts.push(context)
    const page = await context.newPage()
    page.setDefaultTimeout(SHOW_MS)
    const watch = await PageWatch.attach(page)
    const url = org0!.apiPage ?? `${org0!.api}/api`
    const res = await page.goto(url, { waitUntil: 'domcontentloaded' })
    expect(res?.status(), `GET ${url}`).to.equal(200)
    expect(res?.headers()['content-security-policy'], 'the page has its policy').to.include("default-src 'self'")
    // The operations by tag, listed from /api/openapi.json: broadcasting is one of the Messages.
    await page.locator('#operations-Messages-postNewMessageBroadcastNamespace').waitFor()
    expect(await page.locator('.opblock').count(), 'every operation listed').to.be.greaterThan(50)
    // An operation opens, and "Try it out" calls this member from the page (the policy's connect-src 'self').
    const status = page.locator('#operations-Status-getStatus')
    await status.locator('.opblock-summary').first().click()
    await status.locator('button.try-out__btn').click()
    await status.locator('button.execute').click()
    const code = status.locator('.live-responses-table .response .response-col_status').first()
    await code.waitFor()
    expect(((await code.textContent()) ?? '').trim(), 'GET /api/v1/status from the page').to.equal('200')
    await screenshot(page, 'api-page')
    expectNoErrors(watch, 'the API page')
  })
})
