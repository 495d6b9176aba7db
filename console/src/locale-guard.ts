/**
 * Imported first by main.ts, before uPlot: uPlot builds `new Intl.NumberFormat(navigator.language)` when its module
 * loads, and a browser started with a POSIX locale (`LANG=C.UTF-8`, as headless Chromium on a server) reports a
 * language such as `en-US@posix` that Intl rejects, which would stop the whole bundle before anything renders.
 * Such a language is replaced by its usable part (or `en-US`) for this page.
 */
function usable(tag: string): boolean {
  try {
    new Intl.NumberFormat(tag)
    return true
  } catch {
    return false
  }
}

const given = navigator.language
if (!usable(given)) {
  const base = given.split('@')[0] ?? ''
  Object.defineProperty(navigator, 'language', { value: usable(base) ? base : 'en-US', configurable: true })
}
