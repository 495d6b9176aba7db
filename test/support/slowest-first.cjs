// Orders a folder's test files for mocha's parallel mode, which hands them to its workers in the order it is given:
// the slowest first, by the time each took when it last ran (test-results/file-seconds.json, which reporter.cjs
// keeps), so that a long file does not start last and run alone while the other workers wait. A file with no time
// yet (new, or a fresh checkout) goes first: it is timed at once, and an unknown long file never ends the run.
'use strict'
const { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } = require('node:fs')
const { dirname, join, relative, resolve } = require('node:path')

const ROOT = resolve(__dirname, '..', '..')
/** Each file's seconds in the last run that ran it, by its path from the project's root. */
const SECONDS_FILE = join(ROOT, 'test-results', 'file-seconds.json')

function lastSeconds() {
  try {
    return JSON.parse(readFileSync(SECONDS_FILE, 'utf8'))
  } catch {
    return {}
  }
}

/** Every `*.test.ts` under `folder` (from the project's root), as absolute paths, slowest first. */
function slowestFirst(folder) {
  const seconds = lastSeconds()
  const files = readdirSync(join(ROOT, folder), { recursive: true })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(folder, f))
    .sort()
  const last = (f) => (typeof seconds[f] === 'number' ? seconds[f] : Infinity)
  // Stable: files of equal (or no) time keep their path order.
  return files.sort((a, b) => (last(a) === last(b) ? 0 : last(a) < last(b) ? 1 : -1)).map((f) => join(ROOT, f))
}

/**
 * Merges a run's `[file, seconds]` into the file that slowestFirst reads: a run of a few files keeps the others', and
 * files since removed are dropped.
 */
function recordSeconds(times) {
  const seconds = lastSeconds()
  for (const file of Object.keys(seconds)) if (!existsSync(join(ROOT, file))) delete seconds[file]
  for (const [file, s] of times) seconds[relative(ROOT, file)] = s
  mkdirSync(dirname(SECONDS_FILE), { recursive: true })
  writeFileSync(SECONDS_FILE, `${JSON.stringify(seconds, Object.keys(seconds).sort(), 1)}\n`)
}

module.exports = { slowestFirst, recordSeconds }
