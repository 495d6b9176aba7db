import { RE2JS } from 're2js'
import { ParleyError, errorMessage } from '../core/errors.js'
import { MAX_PATTERN_CHARS, regexProgramSize } from '../core/regex-size.js'
import { EVENT_FILTER_FIELDS, type EnrichedEvent, type EventFilterField, type SubscriptionFilter } from '../model/index.js'

/** Whether an event (with the object it refers to) passes a subscription's filter. */
export type EventMatcher = (e: EnrichedEvent) => boolean

/**
 * Compiles a subscription filter once into a matcher holding its compiled expressions (FireFly's `MatchesEvent`):
 * every expression given must match, each unanchored, against any of the strings its field reads from the event
 * (EVENT_FILTER_FIELDS). A filter with no expression matches every event. Expressions run on RE2 (re2js), as
 * FireFly's Go `regexp` does: time linear in the input whatever the pattern, so no filter a client sends can stall
 * delivery. Throws ParleyError INVALID_FIELD for an expression that does not compile.
 */
export function compileFilter(filter: SubscriptionFilter): EventMatcher {
  const tests: { field: EventFilterField; re: RE2JS }[] = []
  for (const field of EVENT_FILTER_FIELDS) {
    const pattern = filterExpression(filter, field)
    // FireFly treats an empty expression as none given; it would match everything anyway.
    if (pattern !== undefined && pattern !== '') tests.push({ field, re: compileExpression(`filter.${field.name}`, pattern) })
  }
  if (tests.length === 0) return () => true
  return (e) => tests.every(({ field, re }) => field.values(e).some((v) => re.test(v)))
}

/** The expression a filter holds for a field, at the field's place in the nested form. */
export function filterExpression(filter: SubscriptionFilter, field: EventFilterField): string | undefined {
  const [top, sub] = field.path
  const at: unknown = filter[top]
  if (sub === undefined) return typeof at === 'string' ? at : undefined
  if (typeof at !== 'object' || at === null) return undefined
  const v: unknown = Object.hasOwn(at, sub) ? (at as Record<string, unknown>)[sub] : undefined
  return typeof v === 'string' ? v : undefined
}

/** How large a program one filter expression may compile to (node/core/regex-size.ts): `^(a|b|...)$` over 100 topics of 8 characters is ~1,000. */
export const MAX_FILTER_INSTRUCTIONS = 2000

/**
 * One filter expression compiled with RE2 syntax. `key` is how the caller named it (`filter.message.tag`,
 * `filter.tag`), for the error, which imitates FireFly's FF10171 and adds the parser's reason.
 */
export function compileExpression(key: string, pattern: string): RE2JS {
  // Counted before compiling: re2js compiles at 2-9 µs an instruction, and each event's match can step through every
  // one for each character of the field, for as long as the subscription lives.
  if (pattern.length > MAX_PATTERN_CHARS) {
    throw new ParleyError('INVALID_FIELD', `${key} regexp ${JSON.stringify(cut(pattern))} is ${pattern.length} characters; a filter expression may have at most ${MAX_PATTERN_CHARS}`)
  }
  const size = regexProgramSize(pattern)
  if (size > MAX_FILTER_INSTRUCTIONS) {
    throw new ParleyError(
      'INVALID_FIELD',
      `${key} regexp ${JSON.stringify(cut(pattern))} compiles to ${size} RE2 instructions; a filter expression may take at most ${MAX_FILTER_INSTRUCTIONS} (a repeat such as {100} copies what it repeats)`,
    )
  }
  try {
    return RE2JS.compile(pattern)
  } catch (err) {
    throw new ParleyError('INVALID_FIELD', `unable to compile ${key} regexp ${JSON.stringify(cut(pattern))}: ${cut(errorMessage(err), 200)}`, { cause: err })
  }
}

/** A pattern echoed in an error (by us or by the parser) is cut: a 100 KiB expression need not come back whole. */
function cut(text: string, max = 100): string {
  return text.length > max ? `${text.slice(0, max)}…` : text
}
