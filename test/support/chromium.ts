/**
 * Headless Chromium for the console's browser tests and its first-view benchmark, driven by playwright-core.
 *
 * The browser is the one `@sparticuz/chromium` ships inside its npm package (so `npm test` needs nothing outside
 * npm); Debian's `/usr/bin/chromium` is tried only when that one cannot start. When neither starts, launching
 * throws an error naming both failures: a browser test fails then, it never skips.
 */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import sparticuz from '@sparticuz/chromium'
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core'
import { isAlive, projectRoot, stopPid } from '../../network/process.js'

/** Flags added to the package's own: nothing in the background may reach for the network, no first-run UI. */
const EXTRA_ARGS = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync']

/**
 * Flags of the package's list (made for AWS Lambda) left out: a `--single-process` Chromium ends when any of its
 * browser contexts closes (seen here with 153.0.0), and the tests give each test a context of its own; and the
 * flags that turn off the web's security model (the same-origin policy, mixed-content blocking, site isolation), so
 * that the console is tested as a browser really runs it (its CSP and same-origin requests included).
 */
const DROPPED_ARGS = ['--single-process', '--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials']

/** Debian's chromium, installed by `.ci/run`: the fallback. */
export const SYSTEM_CHROMIUM = '/usr/bin/chromium'

const LAUNCH_TIMEOUT_MS = 60_000

export interface LaunchedChromium {
  browser: Browser
  /** Which binary runs: the npm package's or the system's. */
  executable: string
  /** The browser process, so that it can be stopped by PID whatever state playwright is in. */
  pid: number | undefined
  /** Closes the browser, and stops its process by PID if it outlives the close. Safe to call twice. */
  close(): Promise<void>
}

/**
 * Launches headless Chromium with a fresh temporary profile (playwright's default for `launch`): the npm package's
 * binary first, then the system's. Throws, naming what each attempt answered, when none starts.
 */
export async function launchChromium(): Promise<LaunchedChromium> {
  const failures: string[] = []
  let npmPath: string | undefined
  try {
    npmPath = await sparticuz.executablePath()
  } catch (err) {
    failures.push(`@sparticuz/chromium could not unpack its browser: ${message(err)}`)
  }
  if (npmPath !== undefined) {
    try {
      return await launchWith(npmPath, [...sparticuz.args.filter((a) => !DROPPED_ARGS.includes(a)), ...EXTRA_ARGS])
    } catch (err) {
      failures.push(`@sparticuz/chromium's browser (${npmPath}) did not start: ${message(err)}`)
    }
  }
  try {
    return await launchWith(SYSTEM_CHROMIUM, ['--no-sandbox', ...EXTRA_ARGS])
  } catch (err) {
    failures.push(`${SYSTEM_CHROMIUM} did not start: ${message(err)}`)
  }
  throw new Error(
    `no Chromium could be started for the browser tests:\n  - ${failures.join('\n  - ')}\n` +
      `@sparticuz/chromium is a devDependency (npm ci installs it); Debian's chromium (apt-get install chromium) is the fallback`,
  )
}

async function launchWith(executablePath: string, args: string[]): Promise<LaunchedChromium> {
  // A browser server (rather than launch) so that the browser's process, and with it its PID, is at hand.
  const server = await chromium.launchServer({ executablePath, args, headless: true, timeout: LAUNCH_TIMEOUT_MS })
  const pid = server.process().pid
  let browser: Browser
  try {
    browser = await chromium.connect(server.wsEndpoint(), { timeout: LAUNCH_TIMEOUT_MS })
  } catch (err) {
    await server.kill().catch(() => undefined)
    if (pid !== undefined) {
      if (isAlive(pid)) await stopPid(pid, 2000)
      signalGroup(pid)
    }
    throw err
  }
  let closing: Promise<void> | undefined
  return {
    browser,
    executable: executablePath,
    pid,
    close() {
      closing ??= (async () => {
        const bounded = (p: Promise<unknown>): Promise<unknown> =>
          Promise.race([p.catch(() => undefined), new Promise((res) => setTimeout(res, 10_000).unref())])
        // A browser that crashed or hangs is stopped by its PID below.
        await bounded(browser.close())
        await bounded(server.close())
        if (pid !== undefined) {
          if (isAlive(pid)) await stopPid(pid, 2000)
          // playwright starts the browser as the leader of its own process group: its renderers and helpers go too.
          signalGroup(pid)
        }
      })()
      return closing
    },
  }
}

/** One problem the page reported: a console error (or warning), an uncaught exception, a failed request. */
export interface PageProblem {
  kind: 'console-error' | 'console-warning' | 'pageerror' | 'requestfailed' | 'http-error'
  text: string
  /** The resource or script it names, when known. */
  url?: string
}

/**
 * Collects what a page reports as going wrong, from the moment it is attached: `console` messages of type error
 * (and warnings, kept apart), uncaught exceptions (`pageerror`), requests that failed, and responses of 400 or more.
 */
export class PageWatch {
  readonly problems: PageProblem[] = []

  /**
   * A watch that also reports Content-Security-Policy violations as console errors (Chromium logs most of them
   * itself; this names each one whatever the browser's wording): call it before the page navigates.
   */
  static async attach(page: Page): Promise<PageWatch> {
    const watch = new PageWatch(page)
    await page.addInitScript({
      content: `document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.effectiveDirective + ' blocked ' + (e.blockedURI || 'inline') + ' in ' + e.sourceFile + ':' + e.lineNumber))`,
    })
    return watch
  }

  constructor(readonly page: Page) {
    page.on('console', (m: ConsoleMessage) => {
      const type = m.type()
      if (type !== 'error' && type !== 'warning') return
      this.problems.push({ kind: type === 'error' ? 'console-error' : 'console-warning', text: m.text(), url: m.location().url || undefined })
    })
    page.on('pageerror', (err) => this.problems.push({ kind: 'pageerror', text: err.stack ?? err.message }))
    page.on('requestfailed', (req) => {
      const failure = req.failure()?.errorText ?? 'failed'
      // A navigation or hash change can cancel a fetch the page no longer needs; that is not a fault of the page.
      if (failure === 'net::ERR_ABORTED') return
      this.problems.push({ kind: 'requestfailed', text: `${req.method()} ${req.url()}: ${failure}`, url: req.url() })
    })
    page.on('response', (res) => {
      if (res.status() >= 400) this.problems.push({ kind: 'http-error', text: `${res.request().method()} ${res.url()} answered ${res.status()}`, url: res.url() })
    })
  }

  /** Errors (not warnings) so far, less those `allowed` accepts (e.g. an API's expected 400 to a bad form). */
  errors(allowed: (p: PageProblem) => boolean = () => false): PageProblem[] {
    return this.problems.filter((p) => p.kind !== 'console-warning' && !allowed(p))
  }

  warnings(): PageProblem[] {
    return this.problems.filter((p) => p.kind === 'console-warning')
  }
}

export function formatProblems(problems: PageProblem[]): string {
  return problems.map((p) => `  [${p.kind}] ${p.text}${p.url && !p.text.includes(p.url) ? ` (${p.url})` : ''}`).join('\n')
}

/** Where the console's screenshots go: test artifacts, ignored by git. */
export const SCREENSHOT_DIR = join(projectRoot, 'test-results', 'console')

/** Saves a screenshot of the page's viewport as `test-results/console/<view>.png`; answers its path. */
export async function screenshot(page: Page, view: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  const file = join(SCREENSHOT_DIR, `${view}.png`)
  mkdirSync(dirname(file), { recursive: true })
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false })
  return file
}

function signalGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL')
  } catch (err) {
    // ESRCH: none left. EPERM: not a group of ours (the PID was reused); leave it alone.
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'ESRCH' && code !== 'EPERM') throw err
  }
}

function message(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  // playwright's launch errors carry the browser's whole log; its first lines say why.
  return text.split('\n').slice(0, 6).join('\n    ')
}
