import type { MemberDescription } from '../../../../network/description.js'
import { get, nsBase, request, type ApiBatch, type ApiEvent, type ApiMessage, type ApiData } from '../../api.js'
import { uploadBlob } from '../../upload.js'

/**
 * What the node under fuzz holds before the fuzzing starts, so that generated paths and bodies reach past "not
 * found": a value, a blob, a confirmed message and its batch, a datatype, an event, the org and node names.
 */
export interface Seeds {
  namespace: string
  /** Ids of each kind this node holds: message, data (value and blob), batch, event, datatype. */
  ids: string[]
  dataId: string
  blobDataId: string
  messageId: string
  identities: string[]
  datatype: { name: string; version: string }
}

export async function plantSeeds(m: MemberDescription, namespace: string): Promise<Seeds> {
  const base = nsBase(m, namespace)
  const must = <T>(what: string, r: { status: number; body: T }, ok: number[] = [200, 202]): T => {
    if (!ok.includes(r.status)) throw new Error(`planting the fuzz seeds: ${what} answered ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const value = must('a value upload', await request<ApiData>('POST', `${base}/data`, { value: { seed: true } }))
  const blob = must('a blob upload', await uploadBlob(m, namespace, Buffer.from('seed blob'), { filename: 'seed.txt', autometa: true }))
  const datatype = { name: 'fuzzseed', version: '1' }
  must(
    'a datatype definition',
    await request('POST', `${base}/datatypes?confirm=true`, { ...datatype, value: { type: 'object', properties: { n: { type: 'integer' } } } }),
  )
  const dt = must('the datatype', await get<{ id: string }>(`${base}/datatypes/${datatype.name}/${datatype.version}`))
  const message = must(
    'a confirmed broadcast',
    await request<ApiMessage>('POST', `${base}/messages/broadcast?confirm=true`, { header: { topics: ['fuzz'], tag: 'seed' }, data: [{ id: value.id }, { id: blob.id }, { value: 'seed' }] }),
  )
  const batches = must('the batches', await get<ApiBatch[]>(`${base}/batches?limit=1`))
  const events = must('the events', await get<ApiEvent[]>(`${base}/events?limit=1`))
  const orgs = must('the orgs', await get<{ name: string; id: string }[]>(`${m.api}/api/v1/network/organizations`))
  const nodes = must('the nodes', await get<{ name: string; id: string }[]>(`${m.api}/api/v1/network/nodes`))
  const identities = [...orgs, ...nodes].flatMap((i) => [i.name, i.id])
  return {
    namespace,
    ids: [value.id, blob.id, message.header.id, dt.id, ...batches.map((b) => b.id), ...events.map((e) => e.id)],
    dataId: value.id,
    blobDataId: blob.id,
    messageId: message.header.id,
    identities: identities.length > 0 ? identities : [m.org],
    datatype,
  }
}
