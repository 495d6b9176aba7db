import { expect } from 'chai'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The user guide and the topic pages name files and link to each other; a rename or a removed heading must fail
 * here rather than leave a reader at a dead end. Checked: every relative link (and its #anchor, against the
 * target's headings) and every backticked path into the repository, outside fenced code blocks.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** Folders whose backticked paths are read as paths from the repository's root. */
const ROOT_FOLDERS = ['node', 'network', 'console', 'scripts', 'test', 'contracts', 'docs']
const ROOT_FILES = new Set(['README.md', 'package.json', 'package-lock.json', 'hardhat.config.ts', 'tsconfig.json'])
const PATH_RE = new RegExp(`^(?:${ROOT_FOLDERS.join('|')})/[A-Za-z0-9_.\\-/]*$`)

/** The text outside fenced code blocks, line by line (a fence's own lines are blanked). */
function prose(markdown: string): string[] {
  let fenced = false
  return markdown.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced
      return ''
    }
    return fenced ? '' : line
  })
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')
}

function anchors(markdown: string): Set<string> {
  const out = new Set<string>()
  for (const line of prose(markdown)) {
    const m = /^#{1,6}\s+(.*)$/.exec(line)
    if (m) out.add(slug(m[1]!))
  }
  return out
}

export interface Problem {
  line: number
  what: string
}

/**
 * What is wrong with one page's links and paths. `file` is its path from the repository's root; `exists` says
 * whether a path from the root exists, `read` answers a file's text (for anchors).
 */
export function problems(file: string, markdown: string, exists: (p: string) => boolean, read: (p: string) => string): Problem[] {
  const out: Problem[] = []
  const dir = path.posix.dirname(file)
  prose(markdown).forEach((text, i) => {
    const line = i + 1
    // Inline code is not a link: blank it before reading links, and read paths from it.
    const code: string[] = []
    const bare = text.replace(/`([^`]+)`/g, (_m, c: string) => {
      code.push(c)
      return ''
    })
    for (const m of bare.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const target = m[1]!
      if (/^[a-z]+:/i.test(target)) continue
      const [rel, anchor] = target.split('#') as [string, string | undefined]
      const to = rel === '' ? file : path.posix.normalize(path.posix.join(dir, rel))
      if (to.startsWith('..')) {
        out.push({ line, what: `link ${target} leaves the repository` })
        continue
      }
      if (!exists(to)) {
        out.push({ line, what: `link ${target}: ${to} does not exist` })
        continue
      }
      if (anchor !== undefined && !anchors(read(to)).has(anchor)) out.push({ line, what: `link ${target}: ${to} has no heading #${anchor}` })
    }
    for (const c of code) {
      const p = c.replace(/^\.\//, '')
      if (!(PATH_RE.test(p) || ROOT_FILES.has(p))) continue
      if (!exists(p.replace(/\/$/, ''))) out.push({ line, what: `path ${c} does not exist` })
    }
  })
  return out
}

function pages(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`)
  return ['README.md', 'test/README.md', ...docs.sort()]
}

describe('docs: links and paths', () => {
  const exists = (p: string): boolean => existsSync(path.join(ROOT, p))
  const read = (p: string): string => readFileSync(path.join(ROOT, p), 'utf8')

  it('the user guide and every docs page are there', () => {
    expect(pages()).to.include.members(['README.md', 'docs/architecture.md', 'docs/api.md', 'docs/testing.md', 'docs/operations.md', 'docs/benchmarks.md'])
  })

  for (const page of pages()) {
    it(`${page}: every relative link, anchor and backticked path resolves`, () => {
      const found = problems(page, read(page), exists, read)
      expect(found.map((p) => `${page}:${p.line}: ${p.what}`)).to.deep.equal([])
    })
  }

  it('README.md stays a guide of at most 300 lines', () => {
    expect(read('README.md').split('\n').length).to.be.at.most(301)
  })

  describe('the check itself', () => {
    const files: Record<string, string> = {
      'docs/a.md': '# Title\n\n## The ordering rules\n',
      'node/x.ts': '',
    }
    const fakeExists = (p: string): boolean => p in files || Object.keys(files).some((f) => f.startsWith(`${p}/`))
    const fakeRead = (p: string): string => files[p] ?? ''

    it('finds a missing file, a missing anchor and a missing path; passes what exists', () => {
      const md = [
        'See [a](a.md#the-ordering-rules), [b](b.md), [c](a.md#nowhere) and [web](https://example.org/x).',
        'Files: `node/x.ts`, `node/y.ts`, `node/`, `members/<org>/config.json`, `test/unit/<source path>.test.ts`.',
        '```',
        '[not a link](missing.md) `node/inside-a-fence.ts`',
        '```',
        'Up: [out](../../outside.md)',
      ].join('\n')
      expect(problems('docs/guide.md', md, fakeExists, fakeRead).map((p) => `${p.line}: ${p.what}`)).to.deep.equal([
        '1: link b.md: docs/b.md does not exist',
        '1: link a.md#nowhere: docs/a.md has no heading #nowhere',
        '2: path node/y.ts does not exist',
        '6: link ../../outside.md leaves the repository',
      ])
    })

    it('slugs headings as GitHub does', () => {
      expect(slug('HTTP: the admin routes')).to.equal('http-the-admin-routes')
      expect(slug('`npm run measure`: start-up and idle')).to.equal('npm-run-measure-start-up-and-idle')
      expect(slug('Data, blobs and datatypes')).to.equal('data-blobs-and-datatypes')
    })
  })
})
