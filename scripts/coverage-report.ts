/**
 * `npm run coverage`'s report: line, branch and function coverage of node/ and network/ from the V8 coverage every
 * process of a test run wrote (c8 collects it into coverage/raw), printed as a table and written to
 * coverage/coverage-summary.json.
 *
 * Not c8's own report: c8 adds up V8's counts by file URL before it maps them to the TypeScript, which is right only
 * when every process ran the same JavaScript for that URL. Here they do not: tsx compiles a module one way for the
 * test process (through its require hook) and another way for a member node (through its ESM loader), so c8 summed
 * offsets of two different programs (node/events/delivery/event-queue.ts read 87.8 % of lines where its own tests
 * alone cover 100 %). So each process's scripts are sorted into buckets that hold one compilation per URL, each bucket
 * is mapped to the sources by c8, and the mapped coverage is merged by source location (istanbul's merge).
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import libCoverage from 'istanbul-lib-coverage'
import libReport from 'istanbul-lib-report'
import reports from 'istanbul-reports'

const require = createRequire(import.meta.url)
const { Report } = require('c8') as { Report: new (opts: Record<string, unknown>) => { getCoverageMapFromAllCoverageFiles(): Promise<libCoverage.CoverageMap> } }

export interface ScriptCoverage {
  url: string
  functions: unknown[]
}

/** A function's coverage as V8 writes it: its first range spans the function (the script's first, the whole script). */
interface FunctionCoverage {
  ranges?: { startOffset: number; endOffset: number }[]
}
export interface RawCoverage {
  result: ScriptCoverage[]
  timestamp?: number
  'source-map-cache'?: Record<string, { lineLengths?: number[] }>
}

/** The project measured (include globs are relative to it) and the raw coverage of its run: `[raw dir]`, default coverage/raw. */
const root = process.cwd()
const rawDir = resolve(process.argv[2] ?? join(root, 'coverage', 'raw'))
const bucketRoot = join(root, 'coverage', 'buckets')
const include = ['node/**', 'network/**']

/** Which compilation of its URL a script is: the line lengths of the JavaScript V8 ran (from Node's source-map cache). */
function compilationOf(raw: RawCoverage, url: string): string {
  const lengths = raw['source-map-cache']?.[url]?.lineLengths
  return lengths === undefined ? 'unmapped' : createHash('sha256').update(lengths.join(',')).digest('hex').slice(0, 16)
}

/**
 * Sorts the scripts of each process's coverage into buckets, so that within a bucket every URL has one compilation
 * only: bucket k holds, for each URL, the scripts of the k-th compilation of it seen. Answers, per bucket, the part
 * of each process's coverage that falls in it (in the processes' order).
 */
export function splitByCompilation(processes: readonly RawCoverage[], dropped: string[] = []): RawCoverage[][] {
  const bucketOf = new Map<string, Map<string, number>>()
  const buckets: RawCoverage[][] = []
  for (const raw of processes) {
    const parts = new Map<number, RawCoverage>()
    for (const loaded of raw.result) {
      if (!loaded.url.startsWith('file://')) continue
      if (!fitsItsMap(raw, loaded)) {
        dropped.push(loaded.url)
        continue
      }
      // tsx's tsImport (the network command under c8) loads modules under a `?tsx-namespace=` query: the same file.
      const script = { ...loaded, url: withoutQuery(loaded.url) }
      const compilations = bucketOf.get(script.url) ?? new Map<string, number>()
      bucketOf.set(script.url, compilations)
      const compilation = compilationOf(raw, loaded.url)
      let bucket = compilations.get(compilation)
      if (bucket === undefined) {
        bucket = compilations.size
        compilations.set(compilation, bucket)
      }
      let part = parts.get(bucket)
      if (part === undefined) {
        part = { result: [], timestamp: raw.timestamp, 'source-map-cache': {} }
        parts.set(bucket, part)
        while (buckets.length <= bucket) buckets.push([])
        buckets[bucket]!.push(part)
      }
      part.result.push(script)
      const map = raw['source-map-cache']?.[loaded.url]
      if (map !== undefined) part['source-map-cache']![script.url] = map
    }
  }
  return buckets
}

/**
 * Whether a script is the compilation its URL's cached source map was made for. A process that compiled one URL
 * twice (tsx's CommonJS hook, then an `import()` of the same file through its ESM loader) keeps the later map only:
 * the other script's offsets, read through it, would credit the wrong lines, so it is left out, and counted.
 */
export function fitsItsMap(raw: RawCoverage, script: ScriptCoverage): boolean {
  const lengths = raw['source-map-cache']?.[script.url]?.lineLengths
  const whole = (script.functions[0] as FunctionCoverage | undefined)?.ranges?.[0]
  if (lengths === undefined || whole === undefined || whole.startOffset !== 0) return true
  // The line lengths leave out each line's terminator; the last line has none.
  const length = lengths.reduce((sum, n) => sum + n, 0) + lengths.length - 1
  return whole.endOffset === length
}

function withoutQuery(url: string): string {
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

/** Writes each bucket of the raw files in rawDir to bucketRoot/<k>/, one file per process part; answers how many. */
function writeBuckets(): number {
  rmSync(bucketRoot, { recursive: true, force: true })
  const names = readdirSync(rawDir).filter((f) => f.endsWith('.json'))
  const raws = names.map((name) => JSON.parse(readFileSync(join(rawDir, name), 'utf8')) as RawCoverage)
  const dropped: string[] = []
  const buckets = splitByCompilation(raws, dropped)
  if (dropped.length > 0) {
    const files = [...new Set(dropped)]
    console.warn(`coverage: ${dropped.length} script(s) of ${files.length} file(s) left out, compiled twice in one process under one URL (the source map fits the other compilation): ${files.slice(0, 5).join(', ')}${files.length > 5 ? ', ...' : ''}`)
  }
  for (const [k, parts] of buckets.entries()) {
    const dir = join(bucketRoot, String(k))
    mkdirSync(dir, { recursive: true })
    for (const [i, part] of parts.entries()) writeFileSync(join(dir, `part-${i}.json`), JSON.stringify(part))
  }
  return buckets.length
}

async function main(): Promise<void> {
  const buckets = writeBuckets()
  const merged = libCoverage.createCoverageMap({})
  for (let b = 0; b < buckets; b++) {
    const report = new Report({ tempDirectory: join(bucketRoot, String(b)), reportsDirectory: join(root, 'coverage'), include, exclude: [], reporter: [], excludeNodeModules: true, resolve: '', omitRelative: true, allowExternal: false })
    merged.merge(await report.getCoverageMapFromAllCoverageFiles())
  }
  rmSync(bucketRoot, { recursive: true, force: true })
  const context = libReport.createContext({ dir: join(root, 'coverage'), coverageMap: merged })
  for (const reporter of ['text', 'json-summary', 'json'] as const) reports.create(reporter, { maxCols: process.stdout.columns || 120 }).execute(context)
  const total = merged.getCoverageSummary()
  console.log(`coverage of node/ and network/ (${buckets} compilation(s) per file at most, merged by source location): lines ${total.lines.pct} %, branches ${total.branches.pct} %, functions ${total.functions.pct} %`)
}

// Run as a program (npm run coverage), not when a test imports it.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main()
