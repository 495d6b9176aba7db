/**
 * The JSON value a blob upload gets, derived as FireFly derives it (`route_post_data.go`, `blobstore.go
 * UploadBlob`, `data.go Seal`), so that the same upload hashes alike here and on a Go member.
 */
import { ParleyError } from '../core/errors.js'
import { goJsonString, parseJsonRaw, type JsonNode } from '../core/json.js'

/**
 * The `metadata` form field as a value: its compacted text when it is JSON, else the text as a JSON string.
 * FireFly quotes a non-JSON string without escaping it (`"%s"`), which breaks on a quote or a backslash; this
 * escapes it properly. Absent, empty or JSON `null`: no value.
 */
export function metadataValue(metadata: string | undefined): string | null {
  if (metadata === undefined || metadata === '') return null
  try {
    const raw = parseJsonRaw(metadata).raw
    return raw === 'null' ? null : raw
  } catch {
    return goJsonString(metadata)
  }
}

export interface AutoMeta {
  filename: string
  mimetype: string
  size: number
}

/**
 * `autometa=true`: the value read as a JSON object (anything else, or what Go cannot decode into a map, counts as
 * `{}`), with `filename`, `mimetype` and `size` set, written out as Go marshals a map: keys sorted at every level,
 * numbers as float64. FireFly adds filename and mimetype, Parley's API also promises size: all three are set.
 */
export function autometaValue(valueRaw: string | null, meta: AutoMeta): string {
  const members = new Map<string, string>()
  const node = valueRaw === null ? undefined : parseJsonRaw(valueRaw)
  if (node?.kind === 'object') {
    try {
      for (const [k, v] of goMapMembers(node)) members.set(k, v)
    } catch (err) {
      if (!(err instanceof NotAGoMap)) throw err
      members.clear()
    }
  }
  members.set('filename', goJsonString(meta.filename))
  members.set('mimetype', goJsonString(meta.mimetype))
  members.set('size', String(meta.size))
  return mapJson(members)
}

/**
 * FireFly's `blob.name`: the value's `name`, else `path + "/" + filename`, else `filename`, else empty. Only
 * string members count.
 */
export function blobName(valueRaw: string | null): string {
  if (valueRaw === null) return ''
  const v = parseJsonRaw(valueRaw)
  if (v.kind !== 'object') return ''
  const str = (key: string): string | undefined => {
    const n = v.get(key)
    return n?.kind === 'string' ? n.value : undefined
  }
  const name = str('name')
  if (name !== undefined) return name
  const filename = str('filename')
  if (filename === undefined) return ''
  const path = str('path')
  return path !== undefined ? `${path}/${filename}` : filename
}

/** A number Go's decoder cannot hold in a float64: it refuses the whole document. */
class NotAGoMap extends Error {}

const compareUtf8 = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))

function mapJson(members: Map<string, string>): string {
  const keys = [...members.keys()].sort(compareUtf8)
  return `{${keys.map((k) => `${goJsonString(k)}:${members.get(k)!}`).join(',')}}`
}

/** An object's members re-marshalled the Go way: a repeated key keeps its last value, as Go's decoder does. */
function goMapMembers(node: JsonNode): Map<string, string> {
  const out = new Map<string, string>()
  for (const m of node.members) out.set(m.key, goValueJson(m.node))
  return out
}

/** `json.Marshal` of what `json.Unmarshal` into `interface{}` made of the node. */
function goValueJson(node: JsonNode): string {
  try {
    switch (node.kind) {
      case 'object':
        return mapJson(goMapMembers(node))
      case 'array':
        return `[${node.items.map(goValueJson).join(',')}]`
      case 'string':
        return goJsonString(node.value)
      case 'number': {
        const n = Number(node.raw)
        if (!Number.isFinite(n)) throw new NotAGoMap()
        // Go's float encoder and JS's Number#toString both write ECMAScript's shortest form; only -0 differs.
        return Object.is(n, -0) ? '-0' : String(n)
      }
      default:
        return node.raw
    }
  } catch (err) {
    if (err instanceof RangeError) throw new ParleyError('INVALID_FIELD', 'metadata nests too deeply to be re-marshalled')
    throw err
  }
}
