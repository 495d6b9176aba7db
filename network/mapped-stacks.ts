/**
 * Stack traces that name the TypeScript files and lines, for the programs a network runs from its build: the build
 * injects this module first into every bundle (network/build.ts) instead of starting them with
 * `--enable-source-maps`. That flag makes Node read and parse the source map of every module as it loads (a member's
 * 2 MB map, Hardhat's hundreds of small ones), whether or not a stack is ever printed: a tenth of a member's start-up
 * CPU. Here a file's map is read the first time one of its frames is formatted, and kept.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** Generated file (as V8 names it: a path, or a file: URL for ESM) → its map and the map's URL, or null for none. */
const maps = new Map<string, { map: SourceMap; url: string } | null>()

/** How much of a file's end is searched for its `sourceMappingURL` comment (esbuild writes it on the last line). */
const TAIL_BYTES = 4096

function lastBytes(path: string): string {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    const length = Math.min(size, TAIL_BYTES)
    const buf = Buffer.alloc(length)
    readSync(fd, buf, 0, length, size - length)
    return buf.toString('utf8')
  } finally {
    closeSync(fd)
  }
}

function mapOf(file: string): { map: SourceMap; url: string } | null {
  let entry = maps.get(file)
  if (entry !== undefined) return entry
  entry = null
  try {
    const fileUrl = file.startsWith('file:') ? file : file.startsWith('/') ? pathToFileURL(file).href : undefined
    if (fileUrl !== undefined) {
      const comment = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(lastBytes(fileURLToPath(fileUrl)))
      // Only maps in files beside the code: an inline (data:) map would mean reading the whole file, and the
      // build writes none.
      if (comment && !comment[1]!.startsWith('data:')) {
        const url = new URL(comment[1]!, fileUrl).href
        entry = { map: new SourceMap(JSON.parse(readFileSync(fileURLToPath(url), 'utf8')) as ConstructorParameters<typeof SourceMap>[0]), url }
      }
    }
  } catch {
    // No readable map: the frame keeps its generated position.
  }
  maps.set(file, entry)
  return entry
}

/** One frame as V8 writes it, with the generated position replaced by the original one when a map knows it. */
function frame(site: NodeJS.CallSite): string {
  const text = String(site)
  const file = site.getFileName()
  const line = site.getLineNumber()
  const column = site.getColumnNumber()
  if (!file || line === null || column === null) return text
  const found = mapOf(file)
  if (!found) return text
  const at = found.map.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number }
  if (at.originalSource === undefined || at.originalLine === undefined || at.originalColumn === undefined) return text
  const source = new URL(at.originalSource, found.url)
  const original = `${source.protocol === 'file:' ? fileURLToPath(source) : source.href}:${at.originalLine + 1}:${at.originalColumn + 1}`
  const generated = `${file}:${line}:${column}`
  const i = text.lastIndexOf(generated)
  return i < 0 ? text : `${text.slice(0, i)}${original}${text.slice(i + generated.length)}`
}

/** Node's own layout of a stack: the error's `toString()`, then one `    at ` line per frame. */
function prepareStackTrace(error: Error, sites: NodeJS.CallSite[]): string {
  let head: string
  try {
    head = Error.prototype.toString.call(error)
  } catch {
    head = '<error>'
  }
  const frames = sites.map((s) => {
    try {
      return frame(s)
    } catch {
      return String(s)
    }
  })
  return frames.length === 0 ? head : `${head}\n    at ${frames.join('\n    at ')}`
}

// A program started with --enable-source-maps (by hand, or through NODE_OPTIONS) keeps Node's own mapping.
if (!process.sourceMapsEnabled) Error.prepareStackTrace = prepareStackTrace
