import { readdirSync, readFileSync } from 'node:fs'

/**
 * Live processes of a process group, from /proc (Linux): PostgreSQL's server leads the group of its backends (the
 * network spawns it detached), so an empty group means nothing of the server is left. Zombies count as gone.
 */
export function processesOfGroup(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        return Number(pgrp) === pgid && state !== 'Z' ? [Number(d)] : []
      } catch {
        return []
      }
    })
}
