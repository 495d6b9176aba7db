import { expect } from 'chai'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const stacksModule = fileURLToPath(new URL('../../../network/mapped-stacks.ts', import.meta.url))

/**
 * The network's programs run without --enable-source-maps and map their own stacks (network/mapped-stacks.ts,
 * injected by network/build.ts): a program bundled the same way must still print TypeScript files and lines.
 */
describe('stack traces of a bundled program', function () {
  this.timeout(20_000)
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-stacks-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  async function bundle(source: string): Promise<string> {
    const esbuild = await import('esbuild')
    const entry = join(dir, 'program.ts')
    writeFileSync(entry, source)
    const out = join(dir, 'program.js')
    await esbuild.build({ entryPoints: [entry], outfile: out, bundle: true, format: 'esm', platform: 'node', sourcemap: true, sourcesContent: false, inject: [stacksModule], logLevel: 'silent' })
    await esbuild.stop()
    return out
  }

  it('names the TypeScript file, line and column of each frame, and keeps the error line and function names', async () => {
    const program = await bundle(
      [
        'interface Unused { a: number }',
        'function failing(): never {',
        "  throw new RangeError('out of range')",
        '}',
        'export function caller(): void {',
        '  failing()',
        '}',
        'try { caller() } catch (err) { console.log((err as Error).stack) }',
        '',
      ].join('\n'),
    )
    const stack = execFileSync(process.execPath, [program], { encoding: 'utf8' })
    const lines = stack.trim().split('\n')
    expect(lines[0]).to.equal('RangeError: out of range')
    expect(lines[1]).to.equal(`    at failing (${join(dir, 'program.ts')}:3:9)`)
    expect(lines[2]).to.equal(`    at caller (${join(dir, 'program.ts')}:6:3)`)
    expect(stack).not.to.contain('program.js')
  })

  it('still maps when the program is started with --enable-source-maps (Node then maps)', async () => {
    const program = await bundle("try { null!.toString() } catch (err) { console.log((err as Error).stack) }\n")
    const stack = execFileSync(process.execPath, ['--enable-source-maps', program], { encoding: 'utf8' })
    expect(stack).to.contain(`${join(dir, 'program.ts')}:1:13`)
  })
})
