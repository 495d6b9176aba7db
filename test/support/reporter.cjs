// Mocha's spec reporter, then the slowest test files with their times (so that growth shows), then one closing line
// in the plain form CI reads: "N passed, N failed, N skipped".
'use strict'
const { mkdirSync, readFileSync, writeFileSync } = require('node:fs')
const { join, relative } = require('node:path')
const Mocha = require('mocha')
const { recordSeconds } = require('./slowest-first.cjs')
const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants

const SLOWEST = 15

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    const started = Date.now()
    // Serial mode: a file's time runs from its first top-level suite's start to its last one's end, hooks included.
    // In parallel mode these events arrive together once a worker has finished a file, so the workers time their
    // files themselves (test/support/run-hooks.ts).
    const serialTimes = new Map()
    const begun = new Map()
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent && suite.parent.root && suite.file) begun.set(suite, Date.now())
    })
    runner.on(EVENT_SUITE_END, (suite) => {
      const at = begun.get(suite)
      if (at === undefined) return
      const t = serialTimes.get(suite.file) || { ms: 0, startedAt: at }
      serialTimes.set(suite.file, { ...t, ms: t.ms + Date.now() - at })
    })
    runner.once(EVENT_RUN_END, () => {
      const parallel = typeof runner.isParallelMode === 'function' && runner.isParallelMode()
      const times = parallel ? workerTimes() : serialTimes
      writeTimes(times, started)
      const slowest = [...times.entries()].map(([file, t]) => [file, t.ms]).sort((a, b) => b[1] - a[1]).slice(0, SLOWEST)
      const wall = ((Date.now() - started) / 1000).toFixed(0)
      const out = [`\nslowest files of ${times.size} (the run took ${wall} s${parallel ? '; files ran in parallel, each timed alone' : ''}):`]
      for (const [file, ms] of slowest) out.push(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${relative(process.cwd(), file)}`)
      const s = runner.stats
      out.push('', `mocha: ${s.passes} passed, ${s.failures} failed, ${s.pending} skipped`, '')
      process.stdout.write(out.join('\n'))
    })
  }
}

/** What the workers recorded in the run folder: one JSON line per file, `{"file", "ms"}`. */
function workerTimes() {
  const times = new Map()
  const folder = process.env.PARLEY_TEST_RUN
  if (!folder) return times
  let text = ''
  try {
    text = readFileSync(join(folder, 'file-times.jsonl'), 'utf8')
  } catch {
    return times
  }
  for (const line of text.split('\n')) {
    if (line === '') continue
    const { file, ms, startedAt, worker } = JSON.parse(line)
    times.set(file, { ms, startedAt, worker })
  }
  return times
}

/**
 * Every file's time, and when it started (seconds into the run), in test-results/file-times.json (ignored by git):
 * what to look at when the run grows. Each file's time is also merged into test-results/file-seconds.json, from
 * which the unit run orders its files (slowest-first.cjs).
 */
function writeTimes(times, runStarted) {
  const files = [...times.entries()]
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([file, t]) => ({ file: relative(process.cwd(), file), seconds: t.ms / 1000, startedAtSecond: Math.max(0, (t.startedAt - runStarted) / 1000), ...(t.worker !== undefined ? { worker: t.worker } : {}) }))
  try {
    mkdirSync('test-results', { recursive: true })
    writeFileSync(join('test-results', 'file-times.json'), `${JSON.stringify({ runSeconds: (Date.now() - runStarted) / 1000, files }, null, 1)}\n`)
    recordSeconds([...times.entries()].map(([file, t]) => [file, t.ms / 1000]))
  } catch {
    // A read-only checkout: the summary printed below is what there is.
  }
}

module.exports = SpecWithSummary
