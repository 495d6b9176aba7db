import { expect } from 'chai'
import { fitsItsMap, splitByCompilation, type RawCoverage } from '../../../scripts/coverage-report.js'

const script = (url: string, count: number, length = 10) => ({ url, functions: [{ functionName: '', ranges: [{ startOffset: 0, endOffset: length, count }], isBlockCoverage: true }] })
const compiled = (lineLengths: number[]) => ({ lineLengths, data: { version: 3, sources: [], mappings: '' } })

describe('coverage report: processes split by how they compiled each file', () => {
  it('keeps one compilation of a URL per bucket, so that no two programs are summed by offset', () => {
    const a = 'file:///p/node/a.ts'
    const b = 'file:///p/node/b.ts'
    const testProcess: RawCoverage = { result: [script(a, 1, 1523), script(b, 2)], 'source-map-cache': { [a]: compiled([66, 1456]), [b]: compiled([10]) } }
    const member: RawCoverage = { result: [script(a, 3, 3191), script(b, 4), script('node:fs', 5)], 'source-map-cache': { [a]: compiled([667, 0, 2522]), [b]: compiled([10]) } }
    const otherMember: RawCoverage = { result: [script(a, 6, 3191)], 'source-map-cache': { [a]: compiled([667, 0, 2522]) } }

    const buckets = splitByCompilation([testProcess, member, otherMember])

    expect(buckets).to.have.length(2)
    const urlsAndCounts = (parts: RawCoverage[]) => parts.map((p) => p.result.map((s) => [s.url, (s.functions[0] as { ranges: { count: number }[] }).ranges[0]!.count]))
    // b compiled alike everywhere: one bucket; a twice: the member's compilation goes to a bucket of its own.
    expect(urlsAndCounts(buckets[0]!)).to.deep.equal([[[a, 1], [b, 2]], [[b, 4]]])
    expect(urlsAndCounts(buckets[1]!)).to.deep.equal([[[a, 3]], [[a, 6]]])
    // Each part carries the source maps of its own scripts only, and nothing that is not a file.
    expect(Object.keys(buckets[1]![0]!['source-map-cache']!)).to.deep.equal([a])
    expect(buckets.flat().flatMap((p) => p.result.map((s) => s.url))).to.not.include('node:fs')
  })

  it('leaves out, and names, a script compiled a second time in one process under a URL whose map fits the other', () => {
    const a = 'file:///p/node/a.ts'
    const b = 'file:///p/node/b.ts'
    // a.ts as tsx's CommonJS hook compiled it (3 lines, 2 + 1 + 4 + 2 newlines = 9 characters) and again as an ES
    // module (14 characters); Node kept the map of the one compiled last.
    const testProcess: RawCoverage = { result: [script(a, 1, 14), script(a, 2, 9), script(b, 3, 10)], 'source-map-cache': { [a]: compiled([2, 1, 4]), [b]: compiled([10]) } }
    expect(fitsItsMap(testProcess, testProcess.result[0]!)).to.equal(false)
    expect(fitsItsMap(testProcess, testProcess.result[1]!)).to.equal(true)

    const dropped: string[] = []
    const buckets = splitByCompilation([testProcess], dropped)

    expect(dropped).to.deep.equal([a])
    expect(buckets).to.have.length(1)
    const counts = buckets[0]![0]!.result.map((s) => [s.url, (s.functions[0] as { ranges: { count: number }[] }).ranges[0]!.count])
    expect(counts).to.deep.equal([[a, 2], [b, 3]])
  })
})
