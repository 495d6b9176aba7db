import { isUuid, type DatatypeId, type Hash } from '../core/ids.js'
import { goJson, parseJsonRaw, RawJson, type JsonNode } from '../core/json.js'
import { sha256Hex } from '../core/hashes.js'
import { errorMessage } from '../core/errors.js'
import { now } from '../core/time.js'
import type { Tx } from '../db/database.js'
import type { DatatypesRepo } from '../db/repos/datatypes.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { DefinitionHandler, DefinitionOutcome } from './types.js'
import { NAME_RE } from '../core/names.js'
import { compileSchema, datatypeNameProblem, datatypeVersionProblem } from '../data/datatype.js'
import { datatypeDefinitionTopic, SYSTEM_NAMESPACE, TAG_DEFINE_DATATYPE, type Data, type Message, DATATYPE_VALIDATOR, type Datatype, registeredBefore } from '../model/index.js'

/** What a datatype definition carries: the datatype as every member will store it, less what confirmation sets. */
export interface DatatypeDefinition {
  id: DatatypeId
  namespace: string
  name: string
  version: string
  /** The schema's compacted JSON text. */
  value: string
}

/** The definition's data value: `{"id","validator","namespace","name","version","hash","value"}`. */
export function datatypeDefinitionValue(d: DatatypeDefinition): string {
  return goJson({
    id: d.id,
    validator: DATATYPE_VALIDATOR,
    namespace: d.namespace,
    name: d.name,
    version: d.version,
    hash: sha256Hex(d.value),
    value: new RawJson(d.value, true),
  })
}

/**
 * Confirms datatype definitions in chain order. Every member applies the same checks to the same ordered
 * definitions, so all of them create the same datatypes under the same ids; for one (namespace, name, version)
 * the definition ordered first wins, and a later one is rejected everywhere.
 */
export function datatypeDefinitionHandler(deps: {
  datatypes: DatatypesRepo
  identities: IdentitiesRepo
  /** Whether a claim for this DID was ordered before `beforeSeq` and is not applied yet (identity/pending). */
  claimPending: (tx: Tx, did: string, beforeSeq: number) => boolean
}): DefinitionHandler {
  return {
    tag: TAG_DEFINE_DATATYPE,
    handle(tx: Tx, message: Message, data: Data[], signer: string, pinSeq: number): DefinitionOutcome {
      const reject = (reason: string): DefinitionOutcome => ({ kind: 'reject', reason: `datatype definition: ${reason}` })
      if (message.header.namespace !== SYSTEM_NAMESPACE) return reject(`sent in namespace ${message.header.namespace}, not ${SYSTEM_NAMESPACE}`)

      // The author's org claim may be ordered earlier on its own topic and not be applied yet; a stranger's never is.
      // Registered as of the definition's place in the chain's order, not as of whichever claim payload came first.
      const known = deps.identities.byVerifier('ethereum_address', signer, tx)
      const org = known && registeredBefore(known, pinSeq) ? known : undefined
      if (known && !org) return reject(`signer ${signer} was registered to ${known.did} only after this definition, in the chain's order`)
      if (!org) {
        if (deps.claimPending(tx, message.header.author, pinSeq)) return { kind: 'wait', wait: { reason: 'identity', author: message.header.author } }
        return reject(`signer ${signer} is not a registered org, and no claim for ${message.header.author} was ordered before this definition`)
      }
      if (org.did !== message.header.author) return reject(`author ${message.header.author} does not own key ${signer} (it belongs to ${org.did})`)

      const parsed = readDefinition(data)
      if (typeof parsed === 'string') return reject(parsed)
      const { def, hash } = parsed

      const topic = datatypeDefinitionTopic(def.namespace)
      if (message.header.topics.length !== 1 || message.header.topics[0] !== topic) {
        return reject(`topics ${JSON.stringify(message.header.topics)} are not ["${topic}"] for namespace ${def.namespace}`)
      }
      const valueHash = sha256Hex(def.value)
      if (hash !== undefined && hash !== valueHash) return reject(`hash ${hash} is not the hash of the schema (${valueHash})`)
      try {
        compileSchema(def.value)
      } catch (err) {
        return reject(errorMessage(err))
      }
      const taken: string[] = [message.header.id, ...message.data.map((r) => r.id)]
      if (taken.includes(def.id)) return reject(`id ${def.id} is the id of the message or its data`)
      if (deps.datatypes.byId(def.id, tx)) return reject(`id ${def.id} is already used by another datatype`)
      const earlier = deps.datatypes.byNameVersion(def.namespace, def.name, def.version, tx)
      if (earlier) return reject(`${def.name}/${def.version} already exists in namespace ${def.namespace}, defined by message ${earlier.message}, which was ordered first`)

      const datatype: Datatype = {
        id: def.id,
        message: message.header.id,
        validator: 'json',
        namespace: def.namespace,
        name: def.name,
        version: def.version,
        hash: valueHash,
        created: now(),
        value: def.value,
        orderedAt: pinSeq,
      }
      deps.datatypes.insert(tx, datatype)
      return { kind: 'confirm', events: [{ type: 'datatype_confirmed', namespace: def.namespace, reference: datatype.id, topic }] }
    },
  }
}

/** The definition in the message's one data value, or why there is none. */
function readDefinition(data: Data[]): { def: DatatypeDefinition; hash: Hash | undefined } | string {
  if (data.length !== 1 || data[0]!.value === null) return 'it must carry exactly one data value'
  let root: JsonNode
  try {
    root = parseJsonRaw(data[0]!.value!)
  } catch {
    return 'its data value is not JSON'
  }
  if (root.kind !== 'object') return 'its data value is not an object'
  const str = (k: string): string | undefined => {
    const v = root.get(k)
    return v && v.kind === 'string' ? v.value : undefined
  }
  const id = str('id')
  if (!id || !isUuid(id) || id !== id.toLowerCase()) return `id ${JSON.stringify(id ?? null)} is not a lowercase UUID`
  const validator = root.get('validator')
  if (validator !== undefined && validator.kind !== 'null' && str('validator') !== DATATYPE_VALIDATOR) return `validator ${validator.raw} is not ${DATATYPE_VALIDATOR}`
  const namespace = str('namespace') ?? ''
  if (!NAME_RE.test(namespace)) return `namespace ${JSON.stringify(namespace)} is not a valid namespace name`
  const name = str('name') ?? ''
  const nameProblem = datatypeNameProblem(name)
  if (nameProblem) return nameProblem
  const version = str('version') ?? ''
  const versionProblem = datatypeVersionProblem(version)
  if (versionProblem) return versionProblem
  const value = root.get('value')
  if (!value || value.kind !== 'object') return 'its value (the JSON Schema) is not an object'
  const hashNode = root.get('hash')
  if (hashNode !== undefined && hashNode.kind !== 'null' && hashNode.kind !== 'string') return 'its hash is not a string'
  const hash = hashNode?.kind === 'string' ? (hashNode.value as Hash) : undefined
  return { def: { id: id as DatatypeId, namespace, name, version, value: value.raw }, hash }
}
