import type { DatabaseEngine } from '../../network/startup/database.js'
import type { Json } from './types.js'
import { engineLabel } from '../../node/commands/move-member.js'

/** Every number of a section by its path (`broadcast.latencyMs.p50`); lists are left out (per-quarter figures). */
function numbers(value: Json, path: string, out: Map<string, number>): void {
  if (typeof value === 'number') out.set(path, value)
  else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) numbers(v, path ? `${path}.${k}` : k, out)
  }
}

/** The figures of the same scenarios on each engine, one line per figure, the engines in columns. */
export function printSideBySide(log: (line: string) => void, results: { engine: DatabaseEngine; sections: { [name: string]: Json } }[]): void {
  const maps = results.map((r) => {
    const m = new Map<string, number>()
    numbers(r.sections, '', m)
    return m
  })
  const paths = [...new Set(maps.flatMap((m) => [...m.keys()]))].filter((p) => maps.every((m) => m.has(p)))
  if (paths.length === 0) return
  const width = Math.max(...paths.map((p) => p.length))
  log(`\nthe same run on each engine:`)
  log(`  ${''.padEnd(width)}  ${results.map((r) => engineLabel(r.engine).padStart(12)).join('')}`)
  for (const p of paths) log(`  ${p.padEnd(width)}  ${maps.map((m) => String(m.get(p)).padStart(12)).join('')}`)
}
