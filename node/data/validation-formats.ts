import ajvFormats from 'ajv-formats'
import { RE2JS } from 're2js'
import type { AnyAjv } from './validation-dialect.js'

/**
 * ajv-formats' `format` checks in bounded time. Most are regular expressions, run here on RE2 (linear whatever the
 * input) like datatype patterns. Three use lookaround, which RE2 lacks, and stay JavaScript RegExps: `hostname` (its
 * lookahead bounds the length it reads), `duration` (anchored, no nested repetition) and `url`, whose expression is
 * quadratic in the length of a string that fails (64,000 characters: 1.8 s) and is charged that way (see
 * validation-steps.ts). The formats written as functions (date, time, date-time, uri, byte, regex) read their input
 * in linear time. Case-insensitive matching follows Unicode's simple folding on RE2, where a JavaScript RegExp
 * without the `u` flag folds a few non-ASCII letters differently: every member uses RE2, so they agree.
 */

// ajv-formats is CommonJS whose typings describe only its `default`; under NodeNext the default import is the
// module object as typed, though at run time it is the plugin itself (the module sets both).
type FormatsPlugin = typeof ajvFormats.default
const addFormats: FormatsPlugin = (typeof ajvFormats === 'function' ? ajvFormats : ajvFormats.default) as FormatsPlugin

/** Formats whose check may take time quadratic in the string's length. */
export const QUADRATIC_FORMATS: ReadonlySet<string> = new Set(['url'])

function onRe2(re: RegExp): ((s: string) => boolean) | undefined {
  let flags = 0
  if (re.flags.includes('i')) flags |= RE2JS.CASE_INSENSITIVE
  if (re.flags.includes('m')) flags |= RE2JS.MULTILINE
  try {
    const compiled = RE2JS.compile(re.source, flags)
    return (s) => compiled.matcher(s).find()
  } catch {
    // Lookaround: the expression stays as it is (see above).
    return undefined
  }
}

/** Adds ajv-formats' formats (and its formatMinimum/… keywords) with every expression RE2 can run moved onto it. */
export function addBoundedFormats(ajv: AnyAjv): void {
  addFormats(ajv)
  for (const [name, f] of Object.entries(ajv.formats)) {
    if (!(f instanceof RegExp)) continue
    const linear = onRe2(f)
    if (linear) ajv.addFormat(name, linear)
  }
}
