import { html } from 'htm/preact'
import { useState } from 'preact/hooks'
import { ApiError, errorText } from './api'

/**
 * Which form field an API error is about, read from its words: the API names no field in a structured way, but
 * its messages do (`SCHEMA_VALIDATION_FAILED: ... must be integer` is about the value, `datatype w/1 is not
 * defined` about the datatype). Rules are tried in order; the first whose field the form has wins.
 */
const RULES: [RegExp, string][] = [
  [/^UNKNOWN_DATATYPE$/, 'datatype-name'],
  [/^SCHEMA_VALIDATION_FAILED$/, 'value'],
  [/\bdatatype value\b|\bvalue \(the JSON Schema\)|\bvalue must be a JSON Schema|\bJSON Schema\b/i, 'schema'],
  [/\bdatatype\b.*\bversion\b|\bversion\b/i, 'version'],
  [/\bdatatype\b/i, 'datatype-name'],
  [/\btopics?\b/i, 'topic'],
  [/\btag\b/i, 'tag'],
  [/\bgroup\b|\bmembers?\b|\bidentity\b|\brecipient/i, 'members'],
  [/\bfile\b|\bblob\b|\bmultipart\b|\bupload/i, 'file'],
  [/\bname\b/i, 'name'],
  [/\bvalue\b|\bdata\[\d+\]|\bvalidat/i, 'value'],
]

/** Field names the rules can produce, as each form spells them (a datatype form's version is `version`). */
export function fieldOf(err: unknown, fields: readonly string[]): string | undefined {
  if (!(err instanceof ApiError)) return undefined
  for (const [re, field] of RULES) {
    const hit = re.source.startsWith('^') ? re.test(err.code) : re.test(err.message)
    if (!hit) continue
    const name = field === 'version' && fields.includes('datatype-version') ? 'datatype-version' : field === 'schema' && !fields.includes('schema') ? 'value' : field
    if (fields.includes(name)) return name
  }
  return undefined
}

export interface FormState<R> {
  errors: Record<string, string>
  result: R | undefined
  busy: boolean
  /** Runs a send: clears old errors and result, then puts each error by its field (or on the form). */
  submit: (run: () => Promise<R>) => Promise<void>
  /** A mistake found before sending (JSON that does not parse), shown like the API's. */
  fail: (field: string, message: string) => void
}

export function useForm<R>(fields: readonly string[]): FormState<R> {
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [result, setResult] = useState<R | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  return {
    errors,
    result,
    busy,
    fail: (field, message) => {
      setResult(undefined)
      setErrors({ [field]: message })
    },
    submit: async (run) => {
      setBusy(true)
      setErrors({})
      setResult(undefined)
      try {
        setResult(await run())
      } catch (err) {
        setErrors({ [fieldOf(err, fields) ?? 'form']: errorText(err) })
      } finally {
        setBusy(false)
      }
    },
  }
}

export function FieldError({ errors, field }: { errors: Record<string, string>; field: string }) {
  const text = errors[field]
  return text ? html`<span class="field-error" data-testid=${`field-error-${field}`} id=${`err-${field}`} role="alert">${text}</span>` : null
}

export function FormError({ errors }: { errors: Record<string, string> }) {
  return errors.form ? html`<p class="error" data-testid="form-error" role="alert">${errors.form}</p>` : null
}

/** Parses a JSON textarea; undefined (after reporting on `field`) when it is not JSON. */
export function parseJsonField(text: string, field: string, form: { fail: (field: string, message: string) => void }): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) }
  } catch (err) {
    form.fail(field, `not JSON: ${err instanceof Error ? err.message : String(err)}`)
    return undefined
  }
}
