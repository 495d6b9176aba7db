import { existsSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'

/** The compiled module's file in a build, beside `node.js` (network/build-native.ts compiles node/core/malloc-trim.c). */
export const MALLOC_TRIM_FILE = 'malloc-trim.node'

/** `trim()` gives back what malloc holds free and says whether any page went; or why there is no `trim`. */
export type MallocTrim = { trim: () => boolean } | { unavailable: string }

/**
 * glibc's malloc gives a thread an arena of its own and hands memory back to the system only from the top of an
 * arena. V8's compiler threads take tens of megabytes there while optimising (TurboFan's zone for SQLite's interpreter
 * loop alone is ~20 MB), free them when done, and leave a few long-lived blocks above: an idle member of a 20-member
 * network held 10–14 MiB free in one such arena, resident for good. `malloc_trim(0)` releases the free pages inside
 * every arena; Node has no call for it, so a build carries a small Node-API module that makes it
 * (node/core/malloc-trim.c). A member calls it once it has gone quiet after work (node/core/idle-gc.ts).
 */
export function loadMallocTrim(file: string): MallocTrim {
  if (!existsSync(file)) return { unavailable: `${file} is not there (the build found no C compiler or no Node-API headers)` }
  const loaded = { exports: {} as { trim?: unknown } }
  try {
    process.dlopen(loaded, file)
  } catch (err) {
    return { unavailable: `${file} does not load here: ${(err as Error).message}` }
  }
  const trim = loaded.exports.trim
  if (typeof trim !== 'function') return { unavailable: `${file} has no trim function` }
  return { trim: () => trim() === true }
}

/** The module beside the running build's `node.js`; undefined when the node runs from its sources (under tsx). */
export function mallocTrimBesideEntry(entry: string | undefined = process.argv[1]): string | undefined {
  return entry !== undefined && basename(entry) === 'node.js' ? join(dirname(resolve(entry)), MALLOC_TRIM_FILE) : undefined
}
