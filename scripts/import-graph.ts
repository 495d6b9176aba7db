// Folder-level import graph of the member node (or any tree of .ts files).
//
//   npx tsx scripts/import-graph.ts [--root DIR] [--check] [--json] [--strict]
//
// Each .ts file belongs to the first path segment under the root ("db" for node/db/repos/x.ts);
// files directly in the root belong to "(root)". We print the folder edges, then the folder-level
// cycles with one concrete file import per edge so a reader can go and cut it. The layering test
// (test/unit/scripts/import-graph.test.ts) imports the same functions, so the CLI and the test cannot disagree.
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import ts from 'typescript'

export const ROOT_FOLDER = '(root)'

/** One import statement (or export-from, or dynamic import) that crosses a folder boundary. */
export interface FileImport {
  from: string // file, posix path relative to the root
  to: string // resolved file (relative to the root); may not exist if the tree is mid-refactor
  specifier: string
  line: number // 1-based
}

export interface FolderGraph {
  root: string
  files: string[]
  /** from folder -> to folder -> the file imports making up that edge. */
  edges: Map<string, Map<string, FileImport[]>>
}

export interface FolderCycle {
  folders: string[]
  /** Every folder edge inside the cycle, with its imports: each one lies on some cycle. */
  edges: { from: string; to: string; imports: FileImport[] }[]
}

/** The one back-edge the design sanctions: node.ts builds the api, and routes receive their
 *  read-only query functions typed by the root's services.ts. Counting it would make
 *  {(root), api} a permanent "cycle", so folderCycles skips it by default (--strict keeps it). */
export const sanctioned = (i: FileImport): boolean => folderOf(i.from) === 'api' && i.to === 'services.ts'

/**
 * Folders that are part of the composition root: `startup/` holds the named start-up phases that node.ts runs, and
 * `commands/` the verbs main.ts runs instead of a node (moving a member's database), which read its config as main does.
 */
export const COMPOSITION_FOLDERS: ReadonlySet<string> = new Set(['startup', 'commands'])

export function folderOf(rel: string): string {
  const parts = rel.split('/')
  return parts.length === 1 || COMPOSITION_FOLDERS.has(parts[0]!) ? ROOT_FOLDER : parts[0]!
}

// Hand-rolled walk: readdirSync's {recursive} is flaky across Node 20 minors with withFileTypes.
function listTs(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue
    const p = path.join(dir, e.name)
    if (e.isDirectory()) listTs(p, out)
    else if (e.isFile() && /\.(ts|mts|cts|tsx)$/.test(e.name)) out.push(p)
  }
  return out
}

// NodeNext specifiers name the emitted file ("./x.js") while the source is x.ts; also accept
// extensionless and directory-index forms so a sloppy import is not silently dropped.
function resolveSpecifier(fromAbs: string, spec: string): string {
  const base = path.resolve(path.dirname(fromAbs), spec)
  const swapped = base.replace(/\.(m|c)?js(x)?$/, (_m, mc: string | undefined, x: string | undefined) => `.${mc ?? ''}ts${x ?? ''}`)
  for (const c of [swapped, base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (existsSync(c) && statSync(c).isFile()) return c // "./chain" is a directory, not a file
  }
  return swapped // unresolved: keep the path so the folder is still attributed
}

const posix = (p: string): string => p.split(path.sep).join('/')

/** Parse every .ts file under `root` and group its relative imports into folder edges. */
export function folderGraph(root: string): FolderGraph {
  const rootAbs = path.resolve(root)
  const files = listTs(rootAbs).sort()
  const edges = new Map<string, Map<string, FileImport[]>>()
  for (const abs of files) {
    const text = readFileSync(abs, 'utf8')
    const from = posix(path.relative(rootAbs, abs))
    // preProcessFile is a scanner, not a type-checker: it sees `import type`, `export ... from`,
    // `import('x')` (value or type position) and `import x = require('x')`, and skips comments
    // and strings. That is exactly the set of edges that couple two folders.
    for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
      const spec = ref.fileName
      if (!spec.startsWith('.')) continue // packages and node: builtins are not our layers
      const to = posix(path.relative(rootAbs, resolveSpecifier(abs, spec)))
      if (to.startsWith('../') || path.isAbsolute(to)) continue // outside the root
      const [f, t] = [folderOf(from), folderOf(to)]
      if (f === t) continue
      const line = text.slice(0, ref.pos).split('\n').length
      const byTo = edges.get(f) ?? new Map<string, FileImport[]>()
      edges.set(f, byTo)
      const list = byTo.get(t) ?? []
      byTo.set(t, list)
      list.push({ from, to, specifier: spec, line })
    }
  }
  return { root: rootAbs, files: files.map((f) => posix(path.relative(rootAbs, f))), edges }
}

/** Strongly connected components with more than one folder (Tarjan), sorted for stable output.
 *  Imports for which `allow` is true are left out; an edge made only of those is no edge. */
export function folderCycles(graph: FolderGraph, allow: (i: FileImport) => boolean = sanctioned): FolderCycle[] {
  const edges = new Map<string, Map<string, FileImport[]>>()
  for (const e of edgeList(graph)) {
    const imports = e.imports.filter((i) => !allow(i))
    if (imports.length) edges.set(e.from, (edges.get(e.from) ?? new Map()).set(e.to, imports))
  }
  graph = { ...graph, edges }
  const nodes = new Set<string>()
  for (const [f, byTo] of graph.edges) { nodes.add(f); for (const t of byTo.keys()) nodes.add(t) }
  const index = new Map<string, number>(), low = new Map<string, number>()
  const stack: string[] = [], onStack = new Set<string>(), sccs: string[][] = []
  let next = 0
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next); next++
    stack.push(v); onStack.add(v)
    for (const w of [...(graph.edges.get(v)?.keys() ?? [])].sort()) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)) }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = []
      let w: string
      do { w = stack.pop()!; onStack.delete(w); scc.push(w) } while (w !== v)
      if (scc.length > 1) sccs.push(scc.sort())
    }
  }
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v)
  return sccs
    .sort((a, b) => a[0]!.localeCompare(b[0]!))
    .map((folders) => {
      const inside = new Set(folders)
      const cycleEdges = edgeList(graph).filter((e) => inside.has(e.from) && inside.has(e.to))
      return { folders, edges: cycleEdges }
    })
}

/** Folder edges as a sorted list (the Map is convenient to query, a list to print). */
export function edgeList(graph: FolderGraph): { from: string; to: string; imports: FileImport[] }[] {
  const out: { from: string; to: string; imports: FileImport[] }[] = []
  for (const [from, byTo] of graph.edges) for (const [to, imports] of byTo) out.push({ from, to, imports })
  return out.sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to))
}

export const formatImport = (i: FileImport, prefix = ''): string =>
  `${prefix}${i.from}:${i.line} imports '${i.specifier}' (${prefix}${i.to})`

function main(argv: string[]): number {
  const rootIdx = argv.indexOf('--root')
  const root = rootIdx >= 0 ? argv[rootIdx + 1] : 'node'
  if (!root || !existsSync(root)) { console.error(`import-graph: no such root '${root ?? ''}'`); return 2 }
  const graph = folderGraph(root)
  const strict = argv.includes('--strict')
  const cycles = folderCycles(graph, strict ? () => false : sanctioned)
  const allowed = strict ? [] : edgeList(graph).flatMap((e) => e.imports.filter(sanctioned))
  const prefix = `${posix(path.relative(process.cwd(), graph.root)) || '.'}/`
  if (argv.includes('--json')) {
    const edges = edgeList(graph).map((e) => ({ from: e.from, to: e.to, count: e.imports.length, imports: e.imports }))
    console.log(JSON.stringify({ root: prefix.slice(0, -1), files: graph.files.length, edges, cycles, allowed }, null, 2))
  } else {
    console.log(`Folder edges under ${prefix} (${graph.files.length} files; same-folder and package imports ignored):`)
    for (const e of edgeList(graph)) console.log(`  ${e.from} -> ${e.to} (${e.imports.length} import${e.imports.length === 1 ? '' : 's'})`)
    if (allowed.length) console.log(`\nNot counted as cycle edges (sanctioned api -> services.ts, see --strict): ${allowed.length} imports`)
    console.log(cycles.length === 0 ? '\nNo folder-level cycles.' : `\nFolder-level cycles: ${cycles.length}`)
    cycles.forEach((c, n) => {
      console.log(`\n  cycle ${n + 1}: {${c.folders.join(', ')}}`)
      // Every edge inside a strongly connected component lies on a cycle; cutting all of an
      // edge's imports is what it takes to remove that edge, so show one and count the rest.
      for (const e of c.edges) {
        const more = e.imports.length - 1
        console.log(`    ${e.from} -> ${e.to}: ${formatImport(e.imports[0]!, prefix)}${more ? ` (+${more} more)` : ''}`)
      }
    })
  }
  return argv.includes('--check') && cycles.length > 0 ? 1 : 0
}

// CLI only when run directly, so the test can import the analysis without side effects.
const invoked = process.argv[1] && existsSync(process.argv[1]) ? pathToFileURL(realpathSync(process.argv[1])).href : ''
if (import.meta.url === invoked) process.exitCode = main(process.argv.slice(2))
