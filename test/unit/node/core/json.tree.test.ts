import { expect } from 'chai'
import { jsonNodesBuilt, parseJsonRaw, type JsonNode, type JsonValue } from '../../../../node/core/json.js'

// Deterministic pseudo-random numbers, so a failure reproduces.
function prng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

/** A random document: containers short and long (either side of what the index records), shallow and deep. */
function randomValue(rnd: () => number, depth: number): JsonValue {
  const r = rnd()
  if (depth > 5 || r < 0.3) {
    const s = rnd()
    if (s < 0.3) return 'x'.repeat(Math.floor(rnd() * 90)) + (rnd() < 0.2 ? '"\\<é' : '')
    if (s < 0.6) return Math.floor(rnd() * 1e6) / 8
    return s < 0.7 ? null : s < 0.85
  }
  const n = Math.floor(rnd() * 5)
  if (r < 0.65) return Array.from({ length: n }, () => randomValue(rnd, depth + 1))
  const o: { [key: string]: JsonValue } = {}
  for (let k = 0; k < n; k++) o[`k${Math.floor(rnd() * 8)}${rnd() < 0.2 ? '\u00e9' : ''}`] = randomValue(rnd, depth + 1)
  return o
}

/**
 * Where a node's raw text, or its count of items or members, differs from JSON.stringify of the same value, reached
 * through eachItem, items, get and pick: one line each (chai is too slow to call per node).
 */
function treeProblems(node: JsonNode, value: JsonValue, path = '$', out: string[] = []): string[] {
  const expected = JSON.stringify(value).replace(/</g, '\\u003c')
  if (node.raw !== expected) out.push(`${path}: ${node.raw} is not ${expected}`)
  if (Array.isArray(value)) {
    if (node.count() !== value.length) out.push(`${path}: counts ${node.count()} items, not ${value.length}`)
    node.eachItem((item, i) => treeProblems(item, value[i]!, `${path}[${i}]`, out))
    node.items.forEach((item, i) => treeProblems(item, value[i]!, `${path}.items[${i}]`, out))
  } else if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value)
    if (node.count() !== keys.length) out.push(`${path}: counts ${node.count()} members, not ${keys.length}`)
    const picked = node.pick(keys)
    keys.forEach((k, j) => {
      treeProblems(node.get(k)!, value[k]!, `${path}.${k}`, out)
      treeProblems(picked[j]!, value[k]!, `${path}.pick(${k})`, out)
    })
  }
  return out
}

describe('JSON node tree: reading what is asked for', () => {
  it('reads every node the same whatever depth the parse indexes up front', () => {
    const rnd = prng(11)
    for (let n = 0; n < 150; n++) {
      const value = randomValue(rnd, 0)
      const text = JSON.stringify(value)
      for (const indexDepth of [0, 1, 3, 10_000]) {
        expect(treeProblems(parseJsonRaw(text, { indexDepth }), value), `${text} (indexDepth ${indexDepth})`).to.deep.equal([])
        expect(parseJsonRaw(text, { indexDepth }).value).to.deep.equal(value)
      }
    }
  })

  it('walks down a document nested 9,999 deep, far below what was indexed up front, in linear time', () => {
    const deep = '{"a":'.repeat(9_999) + '[]' + '}'.repeat(9_999)
    let n: JsonNode | undefined = parseJsonRaw(deep, { indexDepth: 2 })
    let depth = 0
    while (n && n.kind === 'object') {
      depth++
      n = n.get('a')
    }
    expect(depth).to.equal(9_999)
    expect(n?.raw).to.equal('[]')
  })

  it('picks members in the order named, the last of a repeated key, escaped keys decoded, without building the others', () => {
    const before = jsonNodesBuilt()
    const root = parseJsonRaw(`{"b":1,${Array.from({ length: 50_000 }, (_, i) => `"x${i}":[${i}]`).join(',')},"\\u0061":2,"a":3,"b":{"c":4}}`)
    const [a, b, missing] = root.pick(['a', 'b', 'missing'])
    expect(a?.raw).to.equal('3')
    expect(b?.raw).to.equal('{"c":4}')
    expect(missing).to.equal(undefined)
    expect(root.get('\u0061')?.raw).to.equal('3')
    expect(root.get('x49999')?.raw).to.equal('[49999]')
    // The root and the four found: none of the 50,000 members passed over.
    expect(jsonNodesBuilt() - before).to.equal(5)
    expect(root.members).to.have.length(50_004)
    expect(root.get('b')?.raw).to.equal('{"c":4}')
    expect(parseJsonRaw('[1]').pick(['a'])).to.deep.equal([undefined])
  })

  it('counts and visits an array up to a bound, building nothing past it', () => {
    const text = `[${new Array<string>(1_000_000).fill('0').join(',')}]`
    const root = parseJsonRaw(text)
    let before = jsonNodesBuilt()
    expect(root.count(10)).to.equal(11)
    expect(root.count()).to.equal(1_000_000)
    expect(jsonNodesBuilt() - before).to.equal(0)
    const seen: number[] = []
    before = jsonNodesBuilt()
    expect(root.eachItem((item, i) => seen.push(i + Number(item.raw)), 10)).to.equal(11)
    expect(seen).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(jsonNodesBuilt() - before).to.equal(10)
    expect(parseJsonRaw('[1,2]').eachItem(() => {}, 2)).to.equal(2)
    expect(parseJsonRaw('{"a":1}').count()).to.equal(1)
    expect(parseJsonRaw('"s"').count()).to.equal(0)
  })

  it('counts, visits and finds through the children once they are read, with the same answers and bounds', () => {
    const list = parseJsonRaw('[10,20,30,40]')
    expect(list.items.map((n) => n.value)).to.deep.equal([10, 20, 30, 40])
    let before = jsonNodesBuilt()
    expect(list.count()).to.equal(4)
    expect(list.count(2)).to.equal(3)
    const seen: JsonValue[] = []
    expect(list.eachItem((item) => seen.push(item.value), 2)).to.equal(3)
    expect(seen).to.deep.equal([10, 20])
    expect(list.eachItem(() => {})).to.equal(4)
    expect(jsonNodesBuilt() - before).to.equal(0)

    const small = parseJsonRaw('{"a":1,"b":2,"a":3}')
    expect(small.members.map((m) => m.key)).to.deep.equal(['a', 'b', 'a'])
    expect(small.get('a')?.value).to.equal(3)
    expect(small.get('z')).to.equal(undefined)
    expect(small.has('b')).to.equal(true)
    const many = parseJsonRaw(`{${Array.from({ length: 20 }, (_, i) => `"k${i % 18}":${i}`).join(',')}}`)
    expect(many.members).to.have.length(20)
    expect(many.get('k1')?.value).to.equal(19)
    expect(many.get('k17')?.value).to.equal(17)
    expect(many.get('missing')).to.equal(undefined)
    before = jsonNodesBuilt()
    expect(many.pick(['k0', 'k5', 'none']).map((n) => n?.value)).to.deep.equal([18, 5, undefined])
    expect(jsonNodesBuilt() - before).to.equal(0)
  })

  it('answers no members, items or keys for a node of another kind, and its value once computed', () => {
    const list = parseJsonRaw('[{"a":[1]}]')
    expect(list.members).to.deep.equal([])
    expect(list.get('a')).to.equal(undefined)
    expect(list.eachItem(() => {})).to.equal(1)
    const obj = list.items[0]!
    expect(obj.items).to.deep.equal([])
    expect(obj.eachItem(() => {})).to.equal(0)
    expect(parseJsonRaw('"s"').members).to.deep.equal([])
    const value = obj.value
    expect(value).to.deep.equal({ a: [1] })
    expect(obj.value).to.equal(value)
  })
})
