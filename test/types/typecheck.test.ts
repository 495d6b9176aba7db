import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { projectRoot } from '../../network/process.js'

/**
 * The project's TypeScript type-checks: tsx runs the tests without checking types, so this is where a type error
 * fails `npm test`. A test rather than a step before the suite, so that tsc's half a minute of one core runs beside
 * the other files instead of before them.
 */
describe('types', function () {
  this.timeout(300_000)
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

  for (const project of ['tsconfig.json', 'console/tsconfig.json']) {
    it(`tsc --noEmit -p ${project} reports nothing`, async () => {
      const { code, output } = await run(process.execPath, [tsc, '--noEmit', '--pretty', 'false', '-p', project])
      expect(output.trim(), `tsc on ${project}`).to.equal('')
      expect(code).to.equal(0)
    })
  }
})

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}
