/** Namespace of the service's own system traffic (definitions), written with Parley's neutral `svc_` prefix. */
export const SYSTEM_NAMESPACE = 'svc_system'
/** The namespace that always exists, and that the API's routes without `/namespaces/{ns}` serve. */
export const DEFAULT_NAMESPACE = 'default'
export const TAG_IDENTITY_CLAIM = 'svc_identity_claim'
export const TAG_DEFINE_DATATYPE = 'svc_define_datatype'

/** The topic datatype definitions for namespace `ns` are ordered on (in the system namespace). */
export function datatypeDefinitionTopic(ns: string): string {
  return `svc_ns_${ns}`
}
