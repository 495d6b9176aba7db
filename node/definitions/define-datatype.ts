import { ParleyError } from '../core/errors.js'
import { newId, type DatatypeId } from '../core/ids.js'
import type { JsonNode } from '../core/json.js'
import type { DatatypesRepo } from '../db/repos/datatypes.js'
import type { MessageSender, SendOptions } from '../messaging/sender.js'
import { optString } from '../core/input.js'
import { checkDatatypeName, checkDatatypeVersion, compileSchema } from '../data/datatype.js'
import { datatypeDefinitionValue } from './datatype.js'
import { datatypeDefinitionTopic, SYSTEM_NAMESPACE, TAG_DEFINE_DATATYPE, type Message, DATATYPE_VALIDATOR } from '../model/index.js'

export interface DatatypeRequest {
  name: string
  version: string
  /** The schema's compacted JSON text, as sent. */
  value: string
}

/**
 * Reads a define-datatype body, FireFly's `{name, version, value, validator?}`. Fields the node sets (id,
 * message, namespace, hash, created) are ignored, as FireFly ignores them on input.
 */
export function parseDatatypeRequest(body: JsonNode): DatatypeRequest {
  if (body.kind !== 'object') throw new ParleyError('INVALID_FIELD', 'the request body must be a JSON object {name, version, value}')
  const validator = optString(body.get('validator'), 'validator')
  if (validator !== undefined && validator !== '' && validator !== DATATYPE_VALIDATOR) {
    throw new ParleyError('INVALID_FIELD', `validator must be ${DATATYPE_VALIDATOR}: ${JSON.stringify(validator)}`)
  }
  const name = optString(body.get('name'), 'name')
  if (name === undefined || name === '') throw new ParleyError('INVALID_FIELD', 'name is required')
  checkDatatypeName(name)
  const version = optString(body.get('version'), 'version')
  if (version === undefined || version === '') throw new ParleyError('INVALID_FIELD', 'version is required')
  checkDatatypeVersion(version)
  const value = body.get('value')
  if (value === undefined || value.kind === 'null') throw new ParleyError('INVALID_FIELD', 'value (the JSON Schema) is required')
  if (value.kind !== 'object') throw new ParleyError('INVALID_FIELD', 'value must be a JSON Schema object')
  compileSchema(value.raw)
  return { name, version, value: value.raw }
}

/**
 * Defines a datatype: broadcasts its definition on the system namespace, ordered on the target namespace's
 * definition topic. The datatype exists once the definition is confirmed, on every member alike; a name and
 * version already confirmed here is refused at once rather than sent to certain rejection.
 */
export class DatatypeDefiner {
  constructor(private readonly deps: { datatypes: DatatypesRepo; sender: MessageSender }) {}

  async define(namespace: string, req: DatatypeRequest, opts: SendOptions = {}): Promise<Message> {
    this.deps.sender.assertRegistered()
    const existing = this.deps.datatypes.byNameVersion(namespace, req.name, req.version)
    if (existing) throw new ParleyError('CONFLICT', `datatype ${req.name}/${req.version} already exists in namespace ${namespace} (id ${existing.id}, defined by message ${existing.message})`)
    const valueRaw = datatypeDefinitionValue({ id: newId<DatatypeId>(), namespace, name: req.name, version: req.version, value: req.value })
    return this.deps.sender.definition(SYSTEM_NAMESPACE, TAG_DEFINE_DATATYPE, [datatypeDefinitionTopic(namespace)], valueRaw, opts)
  }
}
