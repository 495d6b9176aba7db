import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  edgeList,
  folderCycles,
  folderGraph,
  folderOf,
  formatImport,
  ROOT_FOLDER,
  sanctioned,
  type FileImport,
  type FolderGraph,
} from '../../../scripts/import-graph.js'

// The layering of node/ (see the folder list in node/): foundation, domain types, database, seams to
// the outside, capabilities, api, and the composition root. Each rule is its own test so a failure
// names the rule and lists the file-level imports that break it.

// LAYERS_ROOT lets the rules be pointed at another copy of the tree (e.g. a git snapshot).
const NODE = process.env.LAYERS_ROOT ?? fileURLToPath(new URL('../../../node/', import.meta.url))
const ROOT = process.env.LAYERS_ROOT ? `${NODE.replace(/\/$/, '')}/` : 'node/'

/** File imports out of `from` folder whose target folder fails `ok`. */
function offending(graph: FolderGraph, from: string, ok: (to: string, i: FileImport) => boolean): FileImport[] {
  return edgeList(graph)
    .filter((e) => e.from === from)
    .flatMap((e) => e.imports.filter((i) => !ok(e.to, i)))
}

function expectNone(imports: FileImport[], rule: string): void {
  // expect.fail rather than deep.equal: the message is the list, without a diff of objects after it.
  if (imports.length === 0) return
  const lines = imports.map((i) => `  ${formatImport(i, ROOT)}`)
  expect.fail(`${rule}; offending imports (${imports.length}):\n${lines.join('\n')}`)
}

const only = (...allowed: string[]) => (to: string): boolean => allowed.includes(to)

describe('layers: folder-level imports of node/', () => {
  let graph: FolderGraph
  before(() => { graph = folderGraph(NODE) })

  it('has no folder-level cycles (api -> services.ts excepted)', () => {
    const cycles = folderCycles(graph)
    const text = cycles.map((c) =>
      `  {${c.folders.join(', ')}}\n` +
      c.edges.map((e) => {
        const more = e.imports.length > 1 ? ` (+${e.imports.length - 1} more)` : ''
        return `    ${e.from} -> ${e.to}: ${formatImport(e.imports[0]!, ROOT)}${more}`
      }).join('\n'))
    if (cycles.length) expect.fail(`folder cycles (${cycles.length}), one line per folder edge inside each:\n${text.join('\n')}`)
  })

  it('core imports no other node folder', () => {
    expectNone(offending(graph, 'core', () => false), 'core must stand alone')
  })

  it('model imports only core', () => {
    expectNone(offending(graph, 'model', only('core')), 'model may import only core')
  })

  it('db imports only core and model', () => {
    expectNone(offending(graph, 'db', only('core', 'model')), 'db may import only core and model')
  })

  for (const seam of ['chain', 'storage', 'exchange']) {
    it(`${seam} (a seam) imports only core and model`, () => {
      expectNone(offending(graph, seam, only('core', 'model')), `${seam} may import only core and model`)
    })
  }

  it('api imports no db (routes get query functions via services.ts)', () => {
    expectNone(offending(graph, 'api', (to) => to !== 'db'), 'api must not import db')
  })

  it('no folder but (root) imports api', () => {
    const imports = edgeList(graph)
      .filter((e) => e.to === 'api' && e.from !== ROOT_FOLDER)
      .flatMap((e) => e.imports)
    expectNone(imports, 'only the composition root may import api')
  })

  it('nothing imports the (root) composition files, except api importing services.ts', () => {
    const imports = edgeList(graph)
      .filter((e) => e.to === ROOT_FOLDER)
      .flatMap((e) => e.imports.filter((i) => !sanctioned(i)))
    expectNone(imports, 'the composition root is imported by no one (api may import services.ts)')
  })
})

describe('import-graph analysis (fixture tree)', () => {
  let dir: string
  const write = (rel: string, text: string): void => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
    writeFileSync(path.join(dir, rel), text)
  }

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'import-graph-'))
    write('a/x.ts', `import { y } from '../b/y.js'\nimport Koa from 'koa'\nimport { z } from './z.js'\nexport const x = y + z\n`)
    write('a/z.ts', `export const z = 1\n`)
    // b -> a only through a type-only import: it must still count.
    write('b/y.ts', `import type { Shape } from '../a/deep/shape.js'\nexport const y: Shape = 2\n`)
    write('a/deep/shape.ts', `export type Shape = number\n`)
    // c -> b via export-from and a dynamic import; nothing points back at c.
    write('c/w.ts', `export { y } from '../b/y.js'\nexport const later = () => import('../b/y.js')\nimport 'node:fs'\n`)
    write('main.ts', `import { x } from './a/x.js'\nconsole.log(x)\n`)
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('maps files to first-segment folders and ignores packages and same-folder imports', () => {
    const g = folderGraph(dir)
    expect(edgeList(g).map((e) => `${e.from}->${e.to}:${e.imports.length}`)).to.deep.equal([
      '(root)->a:1', 'a->b:1', 'b->a:1', 'c->b:2',
    ])
  })

  it('reports the two-folder cycle with one file import per edge, type-only imports included', () => {
    const cycles = folderCycles(folderGraph(dir))
    expect(cycles).to.have.length(1)
    expect(cycles[0]!.folders).to.deep.equal(['a', 'b'])
    expect(cycles[0]!.edges.map((e) => [e.from, e.to, e.imports.map((i) => `${i.from}:${i.line}->${i.to}`)])).to.deep.equal([
      ['a', 'b', ['a/x.ts:1->b/y.ts']],
      ['b', 'a', ['b/y.ts:1->a/deep/shape.ts']],
    ])
  })

  it('counts the start-up phases (startup/) as part of the composition root', () => {
    expect(folderOf('startup/store.ts')).to.equal(ROOT_FOLDER)
    expect(folderOf('node.ts')).to.equal(ROOT_FOLDER)
    expect(folderOf('db/repos/x.ts')).to.equal('db')
  })

  it('an allow predicate removes an edge from cycle detection', () => {
    const cycles = folderCycles(folderGraph(dir), (i) => i.from === 'b/y.ts')
    expect(cycles).to.deep.equal([])
  })
})
