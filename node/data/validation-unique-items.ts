import { _, str, type KeywordDefinition } from 'ajv/dist/2020.js'
import type { StepMeter } from './validation-budget.js'

/**
 * `uniqueItems` in linear time. Ajv compares every pair of items when they may be objects or arrays: 20,000 objects
 * held a member for half a minute. Here each item is written once in a canonical form in which two JSON values are
 * equal exactly when JSON Schema says they are (objects whatever their key order, numbers by value, arrays in order),
 * and the forms go into a set.
 */

/**
 * The canonical text of a parsed JSON value: keys sorted, numbers as their shortest decimal (1 and 1.0 parse to the
 * same number, and -0 prints as 0), each kind tagged so that no two kinds meet ("1" and 1 differ). Recursive: values
 * are refused deeper than MAX_VALIDATED_DEPTH before any check runs.
 */
export function canonicalJson(v: unknown): string {
  if (v === null) return 'n'
  switch (typeof v) {
    case 'boolean':
      return v ? 't' : 'f'
    case 'number':
      return `d${String(v)}`
    case 'string':
      return JSON.stringify(v)
    case 'object':
      break
    default:
      throw new TypeError(`not a JSON value: ${typeof v}`)
  }
  if (Array.isArray(v)) {
    let out = '['
    for (let i = 0; i < v.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(v[i])
    return `${out}]`
  }
  const o = v as Record<string, unknown>
  // Default sort: by UTF-16 code units, the same on every member.
  const keys = Object.keys(o).sort()
  let out = '{'
  for (let i = 0; i < keys.length; i++) out += `${i === 0 ? '' : ','}${JSON.stringify(keys[i])}:${canonicalJson(o[keys[i]!])}`
  return `${out}}`
}

/** What an item costs (writing it out and hashing it, about 300 ns for a small object), and its size. */
const STEPS_PER_ITEM = 8
const CHARS_PER_STEP = 8

/**
 * The first repeated item: `[i, j]` with item j (later) equal to item i (earlier), or undefined. Charges eight steps
 * per item and one per 8 characters of its canonical form, so nested `uniqueItems` over a deep value cannot hide
 * quadratic work from the budget.
 */
export function firstDuplicate(items: readonly unknown[], meter: StepMeter): [number, number] | undefined {
  const seen = new Map<string, number>()
  for (let j = 0; j < items.length; j++) {
    const key = canonicalJson(items[j])
    meter.charge(STEPS_PER_ITEM + Math.floor(key.length / CHARS_PER_STEP))
    const i = seen.get(key)
    if (i !== undefined) return [i, j]
    seen.set(key, j)
  }
  return undefined
}

/** The keyword that replaces Ajv's own (`ajv.removeKeyword('uniqueItems')` first); errors worded as Ajv words them. */
export function uniqueItemsKeyword(meter: StepMeter): KeywordDefinition {
  return {
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    error: {
      message: ({ params: { i, j } }) => str`must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
      params: ({ params: { i, j } }) => _`{i: ${i}, j: ${j}}`,
    },
    code(cxt) {
      if (cxt.schema !== true) return
      const { gen, data } = cxt
      const find = gen.scopeValue('func', { ref: firstDuplicate })
      const m = gen.scopeValue('obj', { ref: meter })
      const dup = gen.const('dup', _`${find}(${data}, ${m})`)
      cxt.setParams({ i: _`${dup}[0]`, j: _`${dup}[1]` })
      cxt.fail(_`${dup} !== undefined`)
    },
  }
}
